package import Foundation

/// One batch of ``RetentionStore/deleteExpired(_:before:limit:)`` as statements both backends run in one transaction,
/// in order: ``next(_:)`` gives the first statement, then each next one from the rows of the one before, until it
/// gives `nil`; ``result`` says what the batch did.
///
/// Outcomes and receipt events are deleted per send, oldest finished send first: up to ``sendsPerBatch`` sends are
/// picked from a partial index of the finished sends that still have them, up to `limit` of their rows are deleted by
/// key, and the sends left with none are marked (`outcomes_deleted_at`, `receipts_deleted_at`), so that the next
/// batch starts where this one stopped instead of scanning the sends already done. A send is deleted only once both
/// marks are set, so its delete cascades to a few rows (shards, receipt counts), never to its outcomes.
package struct RetentionBatchPlan {
    /// The most sends whose outcomes or events one batch looks at: inline sends have a few outcomes each.
    package static let sendsPerBatch = 200

    private enum Step {
        case start
        case pickedSends
        case deleted(sends: [String])
        case marked(sends: [String], deleted: Int)
        case deletedAcceptances(sends: [String], marked: [String], deleted: Int)
        case deletedAttempts(sends: [String], deleted: Int)
        case deletedSessions
        case deletedTokens
        case deletedTokenChoices(deleted: Int)
        case done
        case finished
    }

    private let kind: RetentionKind
    private let cutoff: Int64
    private let now: Int64
    private let limit: Int
    private let dialect: SQLStatement.Dialect
    private var step = Step.start
    /// The devices of the first-try batches deleted with the sends' last rows.
    private var batchedDeleted = 0
    package private(set) var result = RetentionBatch(deleted: 0, finished: true)

    /// The refs of sends whose outcomes wait for their period's drop (PostgreSQL, ``SendRecordPeriods``).
    private let waitingForDrop: Range<Int64>?

    package init(
        _ kind: RetentionKind, before cutoff: Date, limit: Int, at now: Date, waitingForDrop: Range<Int64>? = nil,
        _ dialect: SQLStatement.Dialect
    ) {
        self.kind = kind
        self.waitingForDrop = kind == .outcomes ? waitingForDrop : nil
        self.cutoff = StoreTime.microseconds(cutoff)
        self.now = StoreTime.microseconds(now)
        self.limit = max(1, limit)
        self.dialect = dialect
    }

    /// The next statement, given the rows the previous one returned (`nil` for the first); `nil` once the batch is
    /// done.
    package mutating func next(_ rows: [some StoredRow]?) throws -> SQLStatement? {
        switch (step, kind) {
        case (.start, .outcomes), (.start, .receiptEvents):
            step = .pickedSends
            return StoreSQL.sendsKeeping(
                kind, finishedBefore: cutoff, limit: Self.sendsPerBatch, excluding: waitingForDrop, dialect)
        case (.pickedSends, _):
            let sends = try (rows ?? []).map { try $0.text(0) }
            guard !sends.isEmpty else { return finish(deleted: 0, finished: true) }
            step = .deleted(sends: sends)
            return StoreSQL.deleteRows(kind, ofSends: sends, limit: limit, dialect)
        case (.deleted(let sends), _):
            let deleted = rows?.count ?? 0
            step = .marked(sends: sends, deleted: deleted)
            return StoreSQL.markSends(sends, without: kind, at: now, dialect)
        case (.marked(let sends, let deleted), .outcomes):
            // The batches of first-try acceptances (migration 30) go with the last of a send's outcome rows, in one
            // statement: a row per batch, a thousand for a million devices.
            let marked = try (rows ?? []).map { try $0.text(0) }
            guard !marked.isEmpty else {
                step = .deletedAttempts(sends: sends, deleted: deleted)
                return try next(rows)
            }
            step = .deletedAcceptances(sends: sends, marked: marked, deleted: deleted)
            return StoreSQL.deleteAcceptances(ofSends: marked, dialect)
        case (.deletedAcceptances(let sends, let marked, let deleted), _):
            // The delivery trace's attempts (migration 22) go too: a few rows, only for notifications that needed
            // more than one attempt. Neither counts against the batch's limit of outcome rows: they go whole, with
            // the send's last row. The batches' devices count among the outcomes deleted.
            batchedDeleted = try (rows ?? []).reduce(0) { $0 + Int(try $1.integer(0)) }
            step = .deletedAttempts(sends: sends, deleted: deleted)
            return StoreSQL.deleteAttempts(ofSends: marked, dialect)
        case (.marked(let sends, let deleted), _), (.deletedAttempts(let sends, let deleted), _):
            // Fewer sends than asked for, all of whose rows fitted in the batch: none is left.
            return finish(
                deleted: deleted + batchedDeleted, finished: sends.count < Self.sendsPerBatch && deleted < limit)
        case (.start, .sends):
            step = .done
            return StoreSQL.deleteFinishedSends(before: cutoff, limit: limit, dialect)
        case (.start, .consoleSessions):
            step = .deletedSessions
            return StoreSQL.deleteConsoleSessions(lastSeenBefore: cutoff, limit: limit, dialect)
        case (.deletedSessions, _):
            // The links share the batch's limit with the sessions.
            let sessions = rows?.count ?? 0
            guard sessions < limit else { return finish(deleted: sessions, finished: false) }
            step = .done
            result = RetentionBatch(deleted: sessions, finished: true)
            return StoreSQL.deleteSignInLinks(expiredBefore: cutoff, limit: limit - sessions, dialect)
        case (.start, .auditLog):
            step = .done
            return StoreSQL.deleteAuditEntries(before: cutoff, limit: limit, dialect)
        case (.start, .invalidatedTokens):
            step = .deletedTokens
            return StoreSQL.deleteInvalidatedTokens(before: cutoff, limit: limit, dialect)
        case (.deletedTokens, _):
            // The choices and own quiet hours of a token removed or invalidated as long ago share the batch's limit
            // with the tokens: nobody can make or see them again (a person's or an installation's stay).
            let tokens = rows?.count ?? 0
            guard tokens < limit else { return finish(deleted: tokens, finished: false) }
            step = .deletedTokenChoices(deleted: tokens)
            return StoreSQL.deleteTokenPreferences(.choices, goneBefore: cutoff, limit: limit - tokens, dialect)
        case (.deletedTokenChoices(let tokens), _):
            let deleted = tokens + (rows?.count ?? 0)
            guard deleted < limit else { return finish(deleted: deleted, finished: false) }
            step = .done
            result = RetentionBatch(deleted: deleted, finished: true)
            return StoreSQL.deleteTokenPreferences(.quietHours, goneBefore: cutoff, limit: limit - deleted, dialect)
        case (.finished, _):
            return nil
        case (.done, _):
            let deleted = rows?.count ?? 0
            step = .finished
            if kind == .consoleSessions || kind == .invalidatedTokens {
                result.finished = deleted < limit - result.deleted
                result.deleted += deleted
            } else {
                result = RetentionBatch(deleted: deleted, finished: deleted < limit)
            }
            return nil
        }
    }

    private mutating func finish(deleted: Int, finished: Bool) -> SQLStatement? {
        step = .finished
        result = RetentionBatch(deleted: deleted, finished: finished)
        return nil
    }
}
