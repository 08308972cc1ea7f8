package import Foundation
package import HeraldCore

/// Every statement the stores run, written once for both backends.
///
/// The SQL is the common ground of SQLite 3.35+ and PostgreSQL 12+: `ON CONFLICT` upserts, `RETURNING`, row values,
/// partial indexes. Times are integer microseconds (``StoreTime``), lists are JSON text (``StoredList``). Where the
/// two differ (row locks), the statement takes the dialect into account.
package enum StoreSQL {
    typealias Value = SQLStatement.Value

    // MARK: Devices

    /// A token's registration.
    package static func selectDevice(_ token: DeviceToken, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "SELECT \(DeviceQuery.columns) FROM devices d WHERE d.token = $1", [.text(token.hex)])
    }

    /// PostgreSQL: the devices of several tokens in one query (the batched reads of inline sends), in no set order.
    package static func selectDevices(_ tokens: [DeviceToken]) -> SQLArrayStatement {
        SQLArrayStatement(sql: selectDevicesSQL, rows: tokens.map { [.text($0.hex)] }, width: 1)
    }

    private static let selectDevicesSQL = "SELECT \(DeviceQuery.columns) FROM devices d WHERE d.token = ANY($1::text[])"

    /// What an upsert or an invalidation needs to know about a stored row: tags, invalidation, registration time.
    /// Locks the row on PostgreSQL.
    package static func selectDeviceState(_ token: DeviceToken, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "SELECT tags, invalidated_at, registered_at FROM devices WHERE token = $1" + lock(dialect),
            [.text(token.hex)])
    }

    /// Writes a registration: inserts it, or replaces every reported field and clears any invalidation. Returns
    /// `created_at`.
    package static func upsertDevice(
        _ registration: TokenRegistration, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(dialect, upsertDeviceSQL, registrationValues(registration, at: now))
    }

    /// The text of ``upsertDevice(_:at:_:)``, made once from the registration columns: registrations are a hot path.
    private static let upsertDeviceSQL: String = {
        let columns = StoreSchema.registrationColumns(upTo: StoreSchema.latestVersion)
        let now = "$\(columns.count + 1)"
        return "INSERT INTO devices (\(columns.joined(separator: ", ")), registered_at, created_at, updated_at) "
            + "VALUES (\((1...columns.count).map { "$\($0)" }.joined(separator: ", ")), \(now), \(now), \(now)) "
            + "ON CONFLICT (token) DO UPDATE SET "
            + columns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
            + ", registered_at = excluded.registered_at, updated_at = excluded.updated_at, invalidated_at = NULL, "
            + "invalidation_reason = NULL, apns_timestamp = NULL RETURNING created_at"
    }()

    /// PostgreSQL's one-round-trip registration (the `herald_register` function of migration 5): the locking read,
    /// ``upsertDevice(_:at:_:)``, the tag rows and ``moveAside(_:_:)`` in one call. Returns one row: `created_at`,
    /// whether the token existed, its `invalidated_at` before, and the tokens moved aside (comma-separated, or `NULL`).
    package static func register(_ registration: TokenRegistration, at now: Date) -> SQLStatement {
        SQLStatement(.postgres, registerSQL, registerValues(registration, at: now))
    }

    /// The text of ``register(_:at:)``: the registration columns, the time and the move-aside flag.
    private static let registerSQL = "SELECT \(registerResultColumns) FROM herald_register(\(registerPlaceholders))"

    /// PostgreSQL's group commit of registrations (the `herald_register_batch` function of migration 13): the
    /// registrations applied in order, each as ``register(_:at:)`` applies it, in one call and one transaction.
    /// Parameter `j` is the array of every registration's `j`-th bind of ``register(_:at:)``. Returns one row per
    /// registration, in order: the columns of ``register(_:at:)``, then its index counting from 1.
    package static func registerBatch(_ registrations: [(registration: TokenRegistration, at: Date)])
        -> SQLArrayStatement
    {
        SQLArrayStatement(
            sql: registerBatchSQL,
            rows: registrations.map { registerValues($0.registration, at: $0.at) })
    }

    /// The text of ``registerBatch(_:)``.
    private static let registerBatchSQL =
        "SELECT \(registerResultColumns), r_index FROM herald_register_batch(\(registerPlaceholders))"

    /// What ``register(_:at:)`` and ``registerBatch(_:)`` return of a registration; `r_existed` as 0 or 1, which
    /// ``StoredRow`` reads as an integer.
    private static let registerResultColumns =
        "r_created_at, CASE WHEN r_existed THEN 1 ELSE 0 END, r_invalidated_at, r_moved"

    /// `$1, $2, …` for the binds of ``registerValues(_:at:)``.
    private static let registerPlaceholders =
        (1...StoreSchema.registrationColumns(upTo: StoreSchema.latestVersion).count + 2).map { "$\($0)" }
        .joined(separator: ", ")

    /// The binds of ``register(_:at:)``: the registration columns, the time and the move-aside flag.
    private static func registerValues(_ registration: TokenRegistration, at now: Date) -> [Value] {
        registrationValues(registration, at: now) + [.integer(registration.replacesOthersOfItsInstallation ? 1 : 0)]
    }

    /// A registration's columns in `devices` order, then the registration time: the binds of ``upsertDevice(_:at:_:)``
    /// and the first of ``registerValues(_:at:)``.
    private static func registrationValues(_ registration: TokenRegistration, at now: Date) -> [Value] {
        [
            .text(registration.token.hex), .text(registration.topic), .text(registration.environment.name),
            .text(registration.tokenKind.name), .textOrNull(registration.userID),
            .textOrNull(registration.installationID?.lowercasedText),
            .text(StoredList.encode(registration.preferredLanguages)), .textOrNull(registration.appVersion),
            .textOrNull(registration.platform?.name), .text(StoredList.encode(registration.tags)),
            .textOrNull(registration.timeZone), .textOrNull(registration.activityType),
            .textOrNull(registration.activityID), .textOrNull(registration.activitiesEnabled.map(StoredFlag.text)),
            .textOrNull(registration.frequentPushesEnabled.map(StoredFlag.text)),
            .textOrNull(registration.webPush?.endpoint.absoluteString),
            .textOrNull(registration.webPush?.keys.p256dhText), .textOrNull(registration.webPush?.keys.authText),
            .integer(StoreTime.microseconds(now)),
        ]
    }

    /// Deletes a token's tag rows.
    package static func deleteTags(_ token: DeviceToken, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "DELETE FROM device_tags WHERE token = $1", [.text(token.hex)])
    }

    /// Inserts a token's tag rows; `nil` when it has none.
    package static func insertTags(_ tags: [String], for token: DeviceToken, _ dialect: SQLStatement.Dialect)
        -> SQLStatement?
    {
        guard !tags.isEmpty else { return nil }
        var statement = SQLStatement(dialect)
        let tokenPlaceholder = statement.bind(token.hex)
        let rows = tags.map { "(\(statement.bind($0)), \(tokenPlaceholder))" }
        statement.sql =
            "INSERT INTO device_tags (tag, token) VALUES " + rows.joined(separator: ", ")
            + " ON CONFLICT DO NOTHING"
        return statement
    }

    /// The statements that bring a token's tag rows in line with a registration, given the stored `tags` column
    /// (`nil` for a new token): none when the tags did not change.
    package static func rewriteTags(
        _ registration: TokenRegistration, storedTags: String?, _ dialect: SQLStatement.Dialect
    ) -> [SQLStatement] {
        guard storedTags != StoredList.encode(registration.tags) else { return [] }
        var statements = storedTags != nil ? [deleteTags(registration.token, dialect)] : []
        if let insert = insertTags(registration.tags, for: registration.token, dialect) { statements.append(insert) }
        return statements
    }

    /// Deletes the other tokens of a registration's installation, topic and kind; returns their tokens. `nil` when
    /// the registration has no installation id or its kind allows several tokens.
    package static func moveAside(_ registration: TokenRegistration, _ dialect: SQLStatement.Dialect)
        -> SQLStatement?
    {
        guard let installation = registration.installationID, registration.replacesOthersOfItsInstallation else {
            return nil
        }
        return SQLStatement(
            dialect,
            """
            DELETE FROM devices WHERE installation_id = $1 AND topic = $2 AND token_kind = $3 AND token <> $4 \
            AND coalesce(activity_type, '') = $5 AND coalesce(activity_id, '') = $6 RETURNING token
            """,
            [
                .text(installation.lowercasedText), .text(registration.topic),
                .text(registration.tokenKind.name), .text(registration.token.hex),
                .text(registration.activityType ?? ""), .text(registration.activityID ?? ""),
            ])
    }

    /// Deletes a token; returns it when it existed.
    package static func deleteDevice(_ token: DeviceToken, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "DELETE FROM devices WHERE token = $1 RETURNING token", [.text(token.hex)])
    }

    /// Marks a token invalidated, keeping an earlier invalidation.
    package static func invalidate(
        _ token: DeviceToken, reason: APNSReason, apnsTimestamp: Date?, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE devices SET invalidated_at = $2, invalidation_reason = $3, apns_timestamp = $4, updated_at = $2 \
            WHERE token = $1 AND invalidated_at IS NULL
            """,
            [
                .text(token.hex), .integer(StoreTime.microseconds(now)), .text(reason.rawValue),
                .integerOrNull(apnsTimestamp.map(StoreTime.microseconds)),
            ])
    }

    /// Moves a token to an environment.
    package static func updateEnvironment(
        _ token: DeviceToken, to environment: APNSEnvironment, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect, "UPDATE devices SET environment = $2, updated_at = $3 WHERE token = $1 RETURNING token",
            [.text(token.hex), .text(environment.name), .integer(StoreTime.microseconds(now))])
    }

    /// Records that a send moved a device to the other environment (``updateEnvironment(_:to:at:_:)``, in the same
    /// transaction), so that its walk of that environment skips it.
    package static func recordCorrection(
        _ token: DeviceToken, by send: SendID, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect, "INSERT INTO send_corrections (send_id, token) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            [.text(send.description), .text(token.hex)])
    }

    /// Which of `tokens` a send moved to the other environment.
    package static func tokensCorrected(
        by send: SendID, among tokens: [DeviceToken], _ dialect: SQLStatement.Dialect
    ) -> SQLStatement? {
        // The corrections between the lowest and highest token asked about, through the primary key: one text for
        // every page. A list of a page's thousand tokens took SQLite a millisecond to prepare each time (its
        // parameters are looked up one by one), 4 % of a fan-out's CPU; the caller keeps those asked about.
        let hexes = tokens.map(\.hex)
        guard let lowest = hexes.min(), let highest = hexes.max() else { return nil }
        return SQLStatement(
            dialect, "SELECT token FROM send_corrections WHERE send_id = $1 AND token >= $2 AND token <= $3",
            [.text(send.description), .text(lowest), .text(highest)])
    }

    /// PostgreSQL: ``tokensCorrected(by:among:_:)`` with the tokens as one array parameter, so that one text serves
    /// any number of them and is prepared once (its list of a page's thousand tokens took 0.9 ms to plan each time).
    /// A send that corrected no device, as most, is answered by a one-time look for its first correction in the
    /// primary key, without looking up each token (0.4 ms a page); the `ORDER BY` keeps that look on the key (as an
    /// `EXISTS`, PostgreSQL chose to scan the table for it).
    package static func tokensCorrected(by send: SendID, among tokens: [DeviceToken]) -> SQLArrayStatement {
        SQLArrayStatement(
            sql: """
                SELECT token FROM send_corrections WHERE send_id = $2 AND token = ANY($1::text[]) \
                AND (SELECT token FROM send_corrections WHERE send_id = $2 ORDER BY token LIMIT 1) IS NOT NULL
                """,
            typedTables: [(tokens.map { [.text($0.hex)] }, [.text])], scalars: [.text(send.description)])
    }

    /// Deletes tokens invalidated before a moment; returns them.
    package static func purgeInvalidated(before date: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            "DELETE FROM devices WHERE invalidated_at IS NOT NULL AND invalidated_at < $1 RETURNING token",
            [.integer(StoreTime.microseconds(date))])
    }

    // MARK: Sends

    /// The columns of `sends`, in the order ``StoredRow/send()`` reads them.
    package static let sendColumns = """
        id, created_at, updated_at, target, summary, job, status, target_count, accepted, rejected, failed, \
        checkpoint, worker, lease_until, message, send_at, sent_through, lane, shard_count, suppressed_preference, topic, \
        suppressed_frequency_cap, suppressed_quiet_dropped, suppressed_quiet_deferred, suppressed_activities_disabled
        """

    /// ``sendColumns`` as read from `sends` itself (a query or an update of the table, not a CTE's rows), the counts
    /// with what the shards of a sharded send hold and have not moved onto it yet: on PostgreSQL each shard counts what
    /// it records on its own row until its run ends (``recordShardOutcomesSQL``), so that the shards of one send do not
    /// wait for each other on the send's row.
    package static let liveSendColumns = sendColumns.replacingOccurrences(
        of: "accepted, rejected, failed",
        with: ["accepted", "rejected", "failed"].map(liveCount).joined(separator: ", "))

    /// A count of the `sends` row in scope, its shards' included: `accepted`, `rejected` or `failed`.
    package static func liveCount(_ column: String) -> String {
        """
        \(column) + CASE WHEN shard_count IS NULL THEN 0 ELSE coalesce((SELECT CAST(sum(h.\(column)) AS BIGINT) \
        FROM send_shards h WHERE h.send_id = sends.id), 0) END
        """
    }

    /// Inserts a send unless its id exists; returns it.
    package static func insertSend(_ send: NewSend, at now: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            INSERT INTO sends (id, created_at, updated_at, target, summary, job, status, target_count, send_at, \
            accepted, rejected, failed, message, lane, suppressed_preference, topic, suppressed_frequency_cap, \
            suppressed_quiet_dropped, suppressed_quiet_deferred, suppressed_activities_disabled) \
            VALUES ($1, $2, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) \
            ON CONFLICT (id) DO NOTHING RETURNING \(sendColumns)
            """,
            [
                .text(send.id.description), .integer(StoreTime.microseconds(now)), .text(send.target),
                .text(send.summary), .textOrNull(send.job), .text(send.status.rawValue),
                .integerOrNull(send.targetCount), .integerOrNull(send.sendAt.map(StoreTime.microseconds)),
                .integer(Int64(send.counts.accepted)), .integer(Int64(send.counts.rejected)),
                .integer(Int64(send.counts.failed)), .textOrNull(send.message), .text(send.lane.rawValue),
                .integer(Int64(send.suppressed.preference)), .textOrNull(send.topic),
                .integer(Int64(send.suppressed.frequencyCap)),
                .integer(Int64(send.suppressed.quietHoursDropped)), .integer(Int64(send.suppressed.quietHoursDeferred)),
                .integer(Int64(send.suppressed.activitiesDisabled)),
            ])
    }

    /// A send.
    package static func selectSend(_ id: SendID, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "SELECT \(liveSendColumns) FROM sends WHERE id = $1", [.text(id.description)])
    }

    /// Applies a ``SendUpdate``; a final or queued status also releases the lease. A cancelled send keeps its status
    /// and message (its worker may finish after the cancellation). Returns the send.
    package static func updateSend(
        _ id: SendID, _ update: SendUpdate, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        let releases = update.status.map { $0.isFinal || $0 == .queued } ?? false
        return SQLStatement(
            dialect,
            """
            UPDATE sends SET status = CASE WHEN status = 'cancelled' THEN status ELSE coalesce($2, status) END, \
            target_count = coalesce($3, target_count), \
            message = CASE WHEN status = 'cancelled' THEN message ELSE coalesce($4, message) END, updated_at = $5, \
            worker = CASE WHEN $6 = 1 THEN NULL ELSE worker END, \
            lease_until = CASE WHEN $6 = 1 THEN NULL ELSE lease_until END, \
            accepted = coalesce($7, accepted), rejected = coalesce($8, rejected), failed = coalesce($9, failed) \
            WHERE id = $1 RETURNING \(liveSendColumns)
            """,
            [
                .text(id.description), .textOrNull(update.status?.rawValue), .integerOrNull(update.targetCount),
                .textOrNull(update.message), .integer(StoreTime.microseconds(now)), .integer(releases ? 1 : 0),
                .integerOrNull(update.counts?.accepted), .integerOrNull(update.counts?.rejected),
                .integerOrNull(update.counts?.failed),
            ])
    }

    /// Adds a batch's counts to a send and moves its checkpoint; returns the new counts.
    package static func addCounts(
        _ counts: OutcomeCounts, to id: SendID, checkpoint: DeviceCursor?, at now: Date,
        _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE sends SET accepted = accepted + $2, rejected = rejected + $3, failed = failed + $4, \
            checkpoint = coalesce($5, checkpoint), updated_at = $6 WHERE id = $1 RETURNING accepted, rejected, failed
            """,
            [
                .text(id.description), .integer(Int64(counts.accepted)), .integer(Int64(counts.rejected)),
                .integer(Int64(counts.failed)), .textOrNull(checkpoint?.description),
                .integer(StoreTime.microseconds(now)),
            ])
    }

    /// PostgreSQL: records the rows of a batch of outcomes (``OutcomeRecording/rows``) in one statement, after
    /// ``lockForRecording(_:shard:)`` and the recording's read in the same transaction: inserts them under the sequence
    /// numbers the recording gave them (one array parameter per column) and its ``AcceptedBatch``es (one array per
    /// column of `send_acceptances`), adds the kinds of those inserted and the devices of its batches to the send's counts, moves its checkpoint, and returns its counts (no row when there is no
    /// such send). A device the send already has an outcome for keeps it and is not counted again: the recording left
    /// out those it read, and the statement looks again (there is no unique index to conflict with, see migration 27).
    /// The look is a lateral subquery with a `LIMIT`, which PostgreSQL runs per row through the `(suffix, send)` index:
    /// a `NOT EXISTS` may be planned as an anti-join over the send's whole range of the primary key.
    package static func recordOutcomes(_ recording: OutcomeRecording, checkpoint: DeviceCursor?, at now: Date)
        -> SQLArrayStatement
    {
        SQLArrayStatement(
            sql: recordOutcomesSQL, typedTables: recordingTables(recording),
            scalars: [
                .text(recording.send.description), .textOrNull(checkpoint?.description),
                .integer(StoreTime.microseconds(now)), .integer(Int64(recording.acceptedInBatches)),
            ])
    }

    /// PostgreSQL: ``recordOutcomes(_:checkpoint:at:)`` for a shard's run, after ``lockForRecording(_:shard:)`` in the same
    /// transaction instead of the send's lock: the outcomes are numbered in the shard's own range of sequence numbers
    /// (``shardSequenceBase(_:)``), and their counts, the checkpoint and what was recorded go on the shard's row, not
    /// the send's, so that the shards of one send record side by side. Returns the send's counts: its own, and what
    /// every shard holds (this one's with the batch). The look for a device recorded already needs no more than the
    /// shard's lock: shards are disjoint ranges of the target, and a device is only ever sent by its shard.
    package static func recordShardOutcomes(
        _ recording: OutcomeRecording, shard: Int, checkpoint: DeviceCursor?, at now: Date
    ) -> SQLArrayStatement {
        SQLArrayStatement(
            sql: recordShardOutcomesSQL, typedTables: recordingTables(recording),
            scalars: [
                .text(recording.send.description), .textOrNull(checkpoint?.description),
                .integer(StoreTime.microseconds(now)), .integer(Int64(recording.acceptedInBatches)),
                .integer(Int64(shard)),
            ])
    }

    /// The first sequence number of a shard's outcomes is one past its base: shard `i` numbers from `(i + 1) · 2³²`,
    /// above those a send records whole (from 1) and below the next shard's. Outcomes list by sequence, so a sharded
    /// send's list by shard, each in the order recorded.
    package static func shardSequenceBase(_ shard: Int) -> Int64 { Int64(shard + 1) << 32 }

    /// A recording's rows under their sequence numbers, then its batches (``OutcomeRecording/batchRows``), each
    /// value a column of its own type whatever the rows hold: one statement PostgreSQL prepares once.
    private static func recordingTables(_ recording: OutcomeRecording)
        -> [(rows: [[SQLStatement.Value]], types: [SQLArrayStatement.ColumnType])]
    {
        let rows = recording.rows.enumerated().map {
            outcomeValues($1, send: recording.send, sequence: recording.firstSequence + Int64($0))
        }
        return [(rows, outcomeColumnTypes), (recording.batchRows, OutcomeRecording.batchColumnTypes)]
    }

    /// The type of each of ``outcomeColumns``.
    private static let outcomeColumnTypes: [SQLArrayStatement.ColumnType] = [
        .integer, .text, .text, .text, .text, .integer, .text, .integer, .text, .integer, .text, .text,
    ]

    /// The text of ``recordOutcomes(_:checkpoint:at:)``: `$1…$12` the rows' columns, `$13…$21` the batches'
    /// (``OutcomeRecording/batchColumns``), `$22` the send, `$23` the checkpoint, `$24` the time, `$25` the devices of
    /// the recording's batches.
    package static let recordOutcomesSQL = recordOutcomesSQL(onShard: false)

    /// The text of ``recordShardOutcomes(_:shard:checkpoint:at:)``: as ``recordOutcomesSQL``, then `$26` the shard.
    package static let recordShardOutcomesSQL = recordOutcomesSQL(onShard: true)

    private static func recordOutcomesSQL(onShard: Bool) -> String {
        func placeholders(_ types: [SQLArrayStatement.ColumnType], from first: Int) -> String {
            types.enumerated().map { "$\(first + $0)::\($1.sqlName)[]" }.joined(separator: ", ")
        }
        let arrays = placeholders(outcomeColumnTypes, from: 1)
        let batchArrays = placeholders(OutcomeRecording.batchColumnTypes, from: outcomeColumnTypes.count + 1)
        let (send, checkpoint, time, batched, shard) = ("$22", "$23", "$24", "$25::bigint", "$26")
        let selected = outcomeColumnNames.map {
            $0 == "token" ? tokenBytes("v.token", .postgres) : "v.\($0)"
        }.joined(separator: ", ")
        let token = tokenBytes("v.token", .postgres)
        let counts = """
            accepted = accepted + (SELECT count(*) FROM inserted WHERE outcome = 'accepted') + \(batched), \
            rejected = rejected + (SELECT count(*) FROM inserted WHERE outcome = 'rejected'), \
            failed = failed + (SELECT count(*) FROM inserted WHERE outcome NOT IN ('accepted', 'rejected')), \
            checkpoint = coalesce(\(checkpoint), checkpoint), updated_at = \(time)
            """
        let counting =
            onShard
            ? """
            , counted AS (UPDATE send_shards SET \(counts), recorded = recorded + (SELECT count(*) FROM inserted) + \(batched) \
            WHERE send_id = \(send) AND shard = \(shard) RETURNING accepted, rejected, failed) \
            SELECT s.accepted + counted.accepted + others.accepted, s.rejected + counted.rejected + others.rejected, \
            s.failed + counted.failed + others.failed FROM sends s CROSS JOIN counted CROSS JOIN \
            (SELECT CAST(coalesce(sum(accepted), 0) AS BIGINT) AS accepted, \
            CAST(coalesce(sum(rejected), 0) AS BIGINT) AS rejected, CAST(coalesce(sum(failed), 0) AS BIGINT) AS failed \
            FROM send_shards WHERE send_id = \(send) AND shard <> \(shard)) others WHERE s.id = \(send)
            """
            : " UPDATE sends SET \(counts) WHERE id = \(send) RETURNING accepted, rejected, failed"
        return """
            WITH ref AS (SELECT ref FROM sends WHERE id = \(send)), \
            inserted AS (INSERT INTO send_outcomes (send_ref, \(outcomeColumns)) \
            SELECT ref.ref, \(selected) FROM ref CROSS JOIN unnest(\(arrays)) AS v(\(outcomeColumns)) \
            LEFT JOIN LATERAL (SELECT 1 AS found FROM send_outcomes o \
            WHERE \(tokenSuffix("o.token")) = \(tokenSuffix(token)) AND o.send_ref = ref.ref AND o.token = \(token) \
            LIMIT 1) recorded ON true WHERE recorded.found IS NULL RETURNING outcome), \
            batched AS (INSERT INTO send_acceptances (send_ref, \(OutcomeRecording.batchColumns)) \
            SELECT ref.ref, b.* FROM ref CROSS JOIN unnest(\(batchArrays)) AS b(\(OutcomeRecording.batchColumns)))\
            \(counting)
            """
    }

    /// SQLite: inserts one outcome; the send's `ref` is `?1`, then ``outcomeValues(_:send:sequence:)`` with the token
    /// (`?3`) bound as its bytes, then the bytes of its last 8 (``tokenSuffix(_:)``). A device the send already has an
    /// outcome for keeps it (no change): the statement looks for it, under SQLite's single writer. The bytes are bound
    /// rather than turned from hex by `herald_unhex` in the statement: that function, called through GRDB for the row
    /// and twice for the look, took 6 % of the server's CPU in a fan-out. The same SQL for every row, so it is prepared once per connection and
    /// only rebound: in process, a statement per row costs less than multi-row statements, which SQLite journals per
    /// statement and whose binding looks placeholders up linearly.
    package static let insertOneOutcomeSQL =
        """
        INSERT INTO send_outcomes (send_ref, \(outcomeColumns)) \
        SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 WHERE NOT EXISTS \
        (SELECT 1 FROM \(outcomesByToken(.sqlite)) WHERE \(tokenSuffix("token")) = ?14 AND token = ?3 AND send_ref = ?1)
        """

    /// A send's id, locked on PostgreSQL so that its batches are numbered one after the other (SQLite's single writer
    /// holds it already); no row when there is no such send. The lock is the one an update takes (`NO KEY`): it keeps
    /// out other updates and locks of the row, not the inserts of outcomes that refer to it (their foreign key's check
    /// only shares the key), so a shard records while its send's row is locked.
    package static func lockSend(_ id: SendID, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "SELECT id FROM sends WHERE id = $1" + (dialect == .postgres ? " FOR NO KEY UPDATE" : ""),
            [.text(id.description)])
    }

    /// PostgreSQL: the lock a recording of outcomes takes first — its send's row (``lockSend(_:_:)``), or its shard's
    /// (so that the shard's batches are numbered one after the other: a worker that lost the shard's lease may still
    /// be recording); no row when there is none. It also has the transaction's prepared statements run on their generic plans
    /// (`plan_cache_mode`, set for this transaction only). PostgreSQL would otherwise plan the recording's statement
    /// anew for each batch, since the estimate of a plan for the batch's own array sizes is always below the generic
    /// plan's: 0.44 ms of planning per recording, 23 % of PostgreSQL's time in a send to a million devices.
    package static func lockForRecording(_ id: SendID, shard: Int?) -> SQLStatement {
        let generic = "set_config('plan_cache_mode', 'force_generic_plan', true)"
        guard let shard else {
            return SQLStatement(
                .postgres, "SELECT id, \(generic) FROM sends WHERE id = $1 FOR NO KEY UPDATE", [.text(id.description)])
        }
        return SQLStatement(
            .postgres, "SELECT shard, \(generic) FROM send_shards WHERE send_id = $1 AND shard = $2 FOR UPDATE",
            [.text(id.description), .integer(Int64(shard))])
    }

    /// SQLite: a send's `ref`, which ``insertOneOutcomeSQL`` binds; no row when there is no such send.
    package static func sendReference(of id: SendID, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "SELECT ref FROM sends WHERE id = $1", [.text(id.description)])
    }

    /// The bound values of outcome rows, in ``outcomeColumns`` order, numbered from `firstSequence`.
    private static func outcomeValues(
        _ outcomes: ArraySlice<DeliveryOutcome>, send: SendID, firstSequence: Int64,
        binding statement: inout SQLStatement
    ) -> [String] {
        outcomes.enumerated().map { offset, outcome in
            outcomeValues(outcome, send: send, sequence: firstSequence + Int64(offset)).map { statement.bind($0) }
                .joined(separator: ", ")
        }
    }

    /// The values of one outcome row of a send, in ``outcomeColumns`` order: the token as hex (the statements store
    /// its bytes), no apns-id when it is the one the send derives.
    package static func outcomeValues(_ outcome: DeliveryOutcome, send: SendID, sequence: Int64)
        -> [SQLStatement.Value]
    {
        let columns = outcome.resultColumns
        return [
            .integer(sequence), .text(outcome.token.hex), .text(outcome.environment.name), .text(outcome.result.kind),
            .textOrNull(storedAPNSID(outcome, send: send)), .integerOrNull(columns.status), .textOrNull(columns.reason),
            .integerOrNull(columns.timestamp), .textOrNull(columns.message),
            .integer(StoreTime.microseconds(outcome.at)),
            .textOrNull(outcome.action?.rawValue), .textOrNull(outcome.apnsUniqueID),
        ]
    }

    /// PostgreSQL: a finished send with its counts and outcomes (one device each), in one statement — one round trip.
    /// Returns the send; no row (and nothing written) when its id exists. A `NULL` is bound as text, hence the casts
    /// of the integer columns.
    package static func insertFinishedSend(_ send: NewSend, outcomes: [DeliveryOutcome], at now: Date) -> SQLStatement {
        var statement = SQLStatement(.postgres)
        let placeholders = finishedSendValues(send, outcomes: outcomes, at: now).map { statement.bind($0) }
        let created = placeholders[1]
        let insertSend = """
            INSERT INTO sends (id, created_at, updated_at, target, summary, job, status, target_count, accepted, \
            rejected, failed, message, suppressed_preference, topic, suppressed_frequency_cap, suppressed_quiet_dropped, \
            suppressed_quiet_deferred, suppressed_activities_disabled) VALUES (\(placeholders[0]), \(created), \(created), \(placeholders[2...].joined(separator: ", "))) \
            ON CONFLICT (id) DO NOTHING RETURNING \(sendColumns), ref
            """
        // The request's audit entry goes in with the send, and only if the send does.
        let audited = send.audit.map { entry in
            let values = auditValues(entry.clipped()).map { statement.bind($0) }
            return """
                , audited AS (INSERT INTO audit_log (\(auditColumns)) SELECT \(values[0]), \(values[1])::bigint, \
                \(values[2...].joined(separator: ", ")) FROM created)
                """
        }
        guard !outcomes.isEmpty else {
            statement.sql = audited.map { "WITH created AS (\(insertSend))\($0) SELECT \(sendColumns) FROM created" } ?? insertSend
            return statement
        }
        let rows = outcomeValues(outcomes[...], send: send.id, firstSequence: 1, binding: &statement)
        statement.sql = """
            WITH created AS (\(insertSend)), recorded AS (INSERT INTO send_outcomes (send_ref, \(outcomeColumns)) \
            SELECT created.ref, v.seq::bigint, decode(v.token, 'hex'), v.environment, v.outcome, v.apns_id, \
            v.status::bigint, v.reason, \
            v.apns_timestamp::bigint, v.message, v.at::bigint, v.action, v.apns_unique_id FROM created, (VALUES \(rows.map { "(\($0))" }.joined(separator: ", "))) \
            AS v(\(outcomeColumns)))\(audited ?? "") SELECT \(sendColumns) FROM created
            """
        return statement
    }

    /// PostgreSQL: finished sends with their counts and outcomes, in one statement — the group commit of inline sends.
    /// Each send is created at its own time. Returns the sends inserted; a send whose id exists is not returned, and
    /// nothing of it is written. The ids must be distinct. Sends are inserted in id order.
    package static func insertFinishedSends(_ sends: [(send: NewSend, outcomes: [DeliveryOutcome], at: Date)])
        -> SQLArrayStatement
    {
        let sendRows = sends.map { finishedSendValues($0.send, outcomes: $0.outcomes, at: $0.at) }
        let outcomeRows: [[Value]] = sends.flatMap { send, outcomes, _ in
            let id = Value.text(send.id.description)
            return outcomes.enumerated().map { [id] + outcomeValues($1, send: send.id, sequence: Int64($0 + 1)) }
        }
        let auditRows: [[Value]] = sends.compactMap { send, _, _ in
            send.audit.map { [.text(send.id.description)] + auditValues($0.clipped()) }
        }
        return SQLArrayStatement(
            sql: insertFinishedSendsSQL,
            tables: [
                (sendRows, finishedSendColumnTypes.count), (outcomeRows, outcomeColumnTypes.count + 1),
                (auditRows, auditColumnTypes.count + 1),
            ])
    }

    /// A finished send's row, with its counts from its outcomes, in the order of ``finishedSendColumns``: what
    /// ``insertFinishedSend(_:outcomes:at:)`` and ``insertFinishedSends(_:)`` insert.
    private static func finishedSendValues(_ send: NewSend, outcomes: [DeliveryOutcome], at now: Date) -> [Value] {
        var counts = send.counts
        counts.add(kinds: outcomes.map(\.result.kind))
        return [
            .text(send.id.description), .integer(StoreTime.microseconds(now)), .text(send.target), .text(send.summary),
            .textOrNull(send.job), .text(send.status.rawValue), .integerOrNull(send.targetCount),
            .integer(Int64(counts.accepted)), .integer(Int64(counts.rejected)), .integer(Int64(counts.failed)),
            .textOrNull(send.message), .integer(Int64(send.suppressed.preference)), .textOrNull(send.topic),
            .integer(Int64(send.suppressed.frequencyCap)),
            .integer(Int64(send.suppressed.quietHoursDropped)), .integer(Int64(send.suppressed.quietHoursDeferred)),
            .integer(Int64(send.suppressed.activitiesDisabled)),
        ]
    }

    /// The columns of a finished send's row in ``insertFinishedSends(_:)``, with their PostgreSQL types.
    private static let finishedSendColumns = [
        ("id", "text"), ("created_at", "bigint"), ("target", "text"), ("summary", "text"), ("job", "text"),
        ("status", "text"), ("target_count", "bigint"), ("accepted", "bigint"), ("rejected", "bigint"),
        ("failed", "bigint"), ("message", "text"), ("suppressed_preference", "bigint"), ("topic", "text"),
        ("suppressed_frequency_cap", "bigint"),
        ("suppressed_quiet_dropped", "bigint"), ("suppressed_quiet_deferred", "bigint"),
        ("suppressed_activities_disabled", "bigint"),
    ]
    private static var finishedSendColumnTypes: [String] { finishedSendColumns.map(\.1) }

    /// The text of ``insertFinishedSends(_:)``: one array parameter per column of ``finishedSendColumns`` (in that
    /// order, from `$1`), then the outcomes' send ids, then one per ``outcomeColumns``, then the audit entries' send
    /// ids, then one per ``auditColumns``.
    private static let insertFinishedSendsSQL: String = {
        let sendNames = finishedSendColumns.map(\.0).joined(separator: ", ")
        let sendArrays = finishedSendColumns.enumerated().map { "$\($0 + 1)::\($1.1)[]" }.joined(separator: ", ")
        let first = finishedSendColumns.count + 1
        let outcomeArrays = ([.text] + outcomeColumnTypes).enumerated().map { "$\(first + $0)::\($1.sqlName)[]" }
            .joined(separator: ", ")
        let firstAudit = first + outcomeColumnTypes.count + 1
        let auditArrays = (["text"] + auditColumnTypes).enumerated().map { "$\(firstAudit + $0)::\($1)[]" }
            .joined(separator: ", ")
        let auditNames = auditColumns.split(separator: ", ").map { "a.\($0)" }.joined(separator: ", ")
        // A new send's updated_at is its created_at.
        let names = finishedSendColumns.map(\.0)
        let insertedColumns = names.flatMap { $0 == "created_at" ? [$0, "updated_at"] : [$0] }.joined(separator: ", ")
        let inserted = names.flatMap { $0 == "created_at" ? [$0, $0] : [$0] }.joined(separator: ", ")
        let outcomeNames = outcomeColumnNames.map { $0 == "token" ? tokenBytes("o.token", .postgres) : "o.\($0)" }
            .joined(separator: ", ")
        return """
            WITH v AS (SELECT * FROM unnest(\(sendArrays)) AS v(\(sendNames))), \
            created AS (INSERT INTO sends (\(insertedColumns)) SELECT \(inserted) FROM v ORDER BY id \
            ON CONFLICT (id) DO NOTHING RETURNING \(sendColumns), ref), \
            recorded AS (INSERT INTO send_outcomes (send_ref, \(outcomeColumns)) SELECT created.ref, \(outcomeNames) \
            FROM unnest(\(outcomeArrays)) AS o(send_id, \(outcomeColumns)) JOIN created ON created.id = o.send_id), \
            audited AS (INSERT INTO audit_log (\(auditColumns)) SELECT \(auditNames) \
            FROM unnest(\(auditArrays)) AS a(send_id, \(auditColumns)) JOIN created ON created.id = a.send_id) \
            SELECT \(sendColumns) FROM created
            """
    }()

    /// Puts running sends held by any worker but one back in the queue — only those whose worker name starts with
    /// `prefix` when one is given; returns their ids.
    package static func requeueSends(
        exceptWorker worker: String, workerPrefix prefix: String? = nil, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        requeueRuns(in: "sends", returning: "id", exceptWorker: worker, workerPrefix: prefix, at: now, dialect)
    }

    /// Puts the running rows of a table of runs (`sends`, `send_shards`) that a worker but one holds back in the queue.
    static func requeueRuns(
        in table: String, returning column: String, exceptWorker worker: String, workerPrefix prefix: String?,
        at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var statement = SQLStatement(
            dialect,
            """
            UPDATE \(table) SET status = 'queued', worker = NULL, lease_until = NULL, updated_at = $2 \
            WHERE status = 'running' AND worker IS NOT NULL AND worker <> $1
            """,
            [.text(worker), .integer(StoreTime.microseconds(now))])
        if let prefix {
            // substr and length, not LIKE: an instance id may hold % or _.
            let placeholder = statement.bind(prefix)
            statement.sql += " AND substr(worker, 1, length(\(placeholder))) = \(placeholder)"
        }
        statement.sql += " RETURNING \(column)"
        return statement
    }

    /// The columns of `send_outcomes` after `send_id`, in the order ``StoredRow/outcome()`` reads them.
    package static let outcomeColumns =
        "seq, token, environment, outcome, apns_id, status, reason, apns_timestamp, message, at, action, apns_unique_id"

    /// ``outcomeColumns`` one by one.
    static let outcomeColumnNames = outcomeColumns.split(separator: ",").map {
        $0.trimmingCharacters(in: .whitespaces)
    }

    /// One page of a send's outcomes (one row more than the limit).
    package static func outcomes(
        of id: SendID, after cursor: OutcomeCursor?, limit: Int, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT \(selectedOutcomeColumns(dialect)) FROM send_outcomes WHERE send_ref = \(sendReference("$1")) \
            AND seq > $2 ORDER BY seq LIMIT $3
            """,
            [.text(id.description), .integer(cursor?.sequence ?? 0), .integer(Int64(limit + 1))])
    }

    /// Gives the oldest waiting send of some lanes to a worker, leaving out some sends; returns it. On PostgreSQL,
    /// concurrent claimers skip the row another one locked instead of waiting for it.
    package static func claimSend(
        worker: String, leaseUntil: Date, lanes: Set<SendLane>, excluding: Set<SendID> = [],
        precedence: ClaimPrecedence = .none, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        var statement = SQLStatement(dialect)
        let claim = statement.bindClaim(
            worker: worker, leaseUntil: leaseUntil, lanes: lanes, excluding: excluding, column: "id", at: now)
        let order = claimOrder(lanes: lanes, precedence: precedence, laneColumn: "lane", topicColumn: "topic", in: &statement)
        statement.sql = """
            UPDATE sends SET status = 'running', worker = \(claim.worker), lease_until = \(claim.lease), \
            updated_at = \(claim.now) WHERE id = (SELECT id FROM sends WHERE status IN ('queued', 'running') \
            AND (status = 'queued' OR lease_until < \(claim.now)) \
            AND (send_at IS NULL OR send_at <= \(claim.now)) AND lane IN (\(claim.lanes))\(claim.excluded) \
            ORDER BY \(order)created_at, id LIMIT 1\(dialect == .postgres ? " FOR UPDATE SKIP LOCKED" : "")) \
            RETURNING \(sendColumns)
            """
        return statement
    }

    /// The leading `ORDER BY` terms of a claim, with a trailing comma: the lane's rank in ``SendLane/priorityOrder``
    /// when a worker claims from several lanes (the first of them is served first, as in the in-flight budget), then
    /// the app's priority within the lane, so that a high-priority app's campaign never goes before another app's
    /// activity send.
    package static func claimOrder(
        lanes: Set<SendLane>, precedence: ClaimPrecedence, laneColumn: String, topicColumn: String,
        in statement: inout SQLStatement
    ) -> String {
        var order = ""
        if lanes.count > 1 {
            // Lane names are Herald's own constants, not input: written into the statement, not bound.
            let ranks = SendLane.priorityOrder.filter(lanes.contains).enumerated()
                .map { rank, lane in " WHEN '\(lane.rawValue)' THEN \(rank)" }
            order = "CASE \(laneColumn)\(ranks.joined()) END, "
        }
        return order + precedenceOrder(precedence, column: topicColumn, in: &statement)
    }

    /// The leading `ORDER BY` term that ranks sends by their app's priority (`high` 0, `normal` 1, `low` 2), with a
    /// trailing comma; empty when every app has the same priority. A waiting queue is short, so sorting it costs
    /// little beside the claim.
    package static func precedenceOrder(
        _ precedence: ClaimPrecedence, column: String, in statement: inout SQLStatement
    ) -> String {
        let high = precedence.apps(.high)
        let low = precedence.apps(.low)
        guard !high.isEmpty || !low.isEmpty else { return "" }
        var cases = "CASE"
        if !high.isEmpty { cases += " WHEN \(column) IN (\(statement.bindList(high))) THEN 0" }
        if !low.isEmpty { cases += " WHEN \(column) IN (\(statement.bindList(low))) THEN 2" }
        return cases + " ELSE 1 END, "
    }

    /// How many sends wait in each lane: queued and due, or running under a lease that ran out (`lane`, `count` rows).
    package static func waitingSends(at now: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            SELECT lane, count(*), \
            min(CASE WHEN status = 'running' THEN lease_until ELSE coalesce(send_at, created_at) END) \
            FROM sends WHERE status IN ('queued', 'running') \
            AND (status = 'queued' OR lease_until < $1) AND (send_at IS NULL OR send_at <= $1) GROUP BY lane
            """,
            [.integer(StoreTime.microseconds(now))])
    }

    /// The waiting sends per lane of ``waitingSends(at:_:)``'s rows.
    /// - Throws: ``StoreError`` `.corruptRecord` for a lane no store writes.
    package static func waitingLanes(_ rows: [some StoredRow]) throws -> [SendLane: WaitingSends] {
        var lanes: [SendLane: WaitingSends] = [:]
        for row in rows {
            let name = try row.text(0)
            guard let lane = SendLane(rawValue: name) else {
                throw StoreError(.corruptRecord, "A stored send waits in the unknown lane \"\(name)\": repair the row.")
            }
            lanes[lane] = WaitingSends(count: Int(try row.integer(1)), oldest: StoreTime.date(try row.integer(2)))
        }
        return lanes
    }

    /// Puts a running send its worker holds back in the queue until a later time, from the start of its target:
    /// the next wave of a send at each device's local time. Returns the send's id when the worker held it.
    package static func rescheduleSend(
        _ id: SendID, worker: String, sendAt: Date, sentThrough: Date, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE sends SET status = 'queued', worker = NULL, lease_until = NULL, checkpoint = NULL, send_at = $3, \
            sent_through = $4, updated_at = $5 WHERE id = $1 AND worker = $2 AND status = 'running' RETURNING id
            """,
            [
                .text(id.description), .text(worker), .integer(StoreTime.microseconds(sendAt)),
                .integer(StoreTime.microseconds(sentThrough)), .integer(StoreTime.microseconds(now)),
            ])
    }

    /// The earliest time a queued send waits for, after a moment (one row; `NULL` when none waits).
    package static func nextSendAt(after now: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "SELECT min(send_at) FROM sends WHERE status = 'queued' AND send_at > $1",
            [.integer(StoreTime.microseconds(now))])
    }

    /// Extends a worker's lease; returns the send's id when the worker holds it. A send cancelled while running
    /// stays its worker's, so the worker records what it has in flight before it stops.
    package static func renewLease(
        of id: SendID, worker: String, until: Date, at now: Date, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE sends SET lease_until = $3, updated_at = $4 \
            WHERE id = $1 AND worker = $2 AND status IN ('running', 'cancelled') RETURNING id
            """,
            [
                .text(id.description), .text(worker), .integer(StoreTime.microseconds(until)),
                .integer(StoreTime.microseconds(now)),
            ])
    }

    // MARK: API keys

    /// The columns of `api_keys` that ``StoredRow/apiKey()`` reads: never the hash.
    package static let apiKeyColumns =
        "id, name, scopes, prefix, created_at, revoked_at, apps, environment, expires_at, last_used_at"

    /// Stores a key with its credential.
    package static func insertAPIKey(_ key: APIKey, credential: APIKeyCredential, _ dialect: SQLStatement.Dialect)
        -> SQLStatement
    {
        SQLStatement(
            dialect,
            """
            INSERT INTO api_keys (id, name, secret_hash, scopes, prefix, created_at, hash_scheme, lookup_id, salt, \
            apps, environment, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """,
            [
                .text(key.storedID), .text(key.name), .text(credential.hash), .text(key.storedScopes),
                .text(key.prefix), .integer(StoreTime.microseconds(key.createdAt)), .text(credential.scheme.rawValue),
                SQLStatement.Value.textOrNull(credential.lookupID), .text(credential.salt), .text(key.storedApps),
                .textOrNull(key.environment?.name), .integerOrNull(key.expiresAt.map(StoreTime.microseconds)),
            ])
    }

    /// Every key, oldest first.
    package static func apiKeys(_ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(dialect, "SELECT \(apiKeyColumns) FROM api_keys ORDER BY created_at, id")
    }

    /// Revokes an active key; returns its id when it was active.
    package static func revokeAPIKey(_ id: UUID, at now: Date, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING id",
            [.text(id.lowercasedText), .integer(StoreTime.microseconds(now))])
    }

    /// Records that a key authenticated at `now`, unless it did within the last `resolution`; returns its id when
    /// written. Several instances recording one key at once write once.
    package static func recordAPIKeyUse(
        _ id: UUID, at now: Date, resolution: TimeInterval, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $3) \
            RETURNING id
            """,
            [
                .text(id.lowercasedText), .integer(StoreTime.microseconds(now)),
                .integer(StoreTime.microseconds(now.addingTimeInterval(-resolution))),
            ])
    }

    /// The columns ``StoredRow/storedAPIKey()`` reads: the key's, then its credential's.
    package static let storedAPIKeyColumns = apiKeyColumns + ", hash_scheme, lookup_id, salt, secret_hash"

    /// The keys with a lookup id, or without one for `nil`, revoked ones included.
    package static func storedAPIKeys(lookupID: String?, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        guard let lookupID else {
            return SQLStatement(
                dialect,
                "SELECT \(storedAPIKeyColumns) FROM api_keys WHERE lookup_id IS NULL ORDER BY created_at, id"
            )
        }
        return SQLStatement(
            dialect,
            "SELECT \(storedAPIKeyColumns) FROM api_keys WHERE lookup_id = $1 ORDER BY created_at, id",
            [.text(lookupID)])
    }

    /// Replaces a key's credential.
    package static func replaceAPIKeyCredential(
        _ id: UUID, with credential: APIKeyCredential, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect, "UPDATE api_keys SET hash_scheme = $2, lookup_id = $3, salt = $4, secret_hash = $5 WHERE id = $1",
            [
                .text(id.lowercasedText), .text(credential.scheme.rawValue),
                SQLStatement.Value.textOrNull(credential.lookupID), .text(credential.salt), .text(credential.hash),
            ])
    }

    // MARK: Provider tokens

    /// The stored token of a key id.
    package static func latestProviderToken(keyID: String, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect, "SELECT jwt, key_id, team_id, issued_at FROM provider_tokens WHERE key_id = $1", [.text(keyID)])
    }

    /// Stores a token unless a token issued at the same time or later is stored; returns the key id when saved.
    package static func saveProviderToken(_ token: ProviderToken, _ dialect: SQLStatement.Dialect) -> SQLStatement {
        SQLStatement(
            dialect,
            """
            INSERT INTO provider_tokens (key_id, team_id, jwt, issued_at) VALUES ($1, $2, $3, $4) \
            ON CONFLICT (key_id) DO UPDATE SET team_id = excluded.team_id, jwt = excluded.jwt, \
            issued_at = excluded.issued_at WHERE provider_tokens.issued_at < excluded.issued_at RETURNING key_id
            """,
            [
                .text(token.keyID), .text(token.teamID), .text(token.jwt),
                .integer(StoreTime.microseconds(token.issuedAt)),
            ])
    }

    // MARK: Helpers

    private static func lock(_ dialect: SQLStatement.Dialect) -> String {
        // SQLite has one writer at a time, so a write transaction already holds everything it reads.
        dialect == .postgres ? " FOR UPDATE" : ""
    }
}
