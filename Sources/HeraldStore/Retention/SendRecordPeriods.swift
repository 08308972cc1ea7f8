/// The periods of send records on PostgreSQL (migration 31, docs/storage.md "Retention by the piece"): `send_outcomes`
/// and `send_acceptances` are partitioned by ranges of `send_ref`, one range per period of sends, so that retention
/// drops a period's records whole — no `DELETE` of millions of rows, no vacuum debt — once every send of it finished
/// before the cutoff.
///
/// A period is a range of send refs that begins when the one before it closes: the next ref handed out moves to its
/// first (a jump of the identity sequence), so every send made while it is open gets a ref in it, and its records land
/// in its partitions. Ranges are ``span`` wide, far more sends than a period can make. Period 0 holds every send made
/// before the migration, from the lowest ref.
///
/// This value decides from the periods' rows; ``PostgresStore`` carries its decisions out.
package struct SendRecordPeriods: Sendable, Hashable {
    /// The refs a period's range holds: 2^40, a million sends a second for twelve days.
    package static let span: Int64 = 1 << 40

    /// One row of `send_record_periods`; times in the store's microseconds.
    package struct Period: Sendable, Hashable {
        package var number: Int64
        /// Its first ref; `nil` for period 0, which holds every ref below its end.
        package var firstRef: Int64?
        /// The ref after its last.
        package var endRef: Int64
        /// When it opened: `nil` until the first retention run after the migration.
        package var openedAt: Int64?
        /// When the next one opened: `nil` while it is the open one (and for period 0 until the first run).
        package var closedAt: Int64?
        /// The length asked when it opened (``rollSendRecordPeriod(every:)``); `nil` for period 0.
        package var length: Int64?

        package init(
            number: Int64, firstRef: Int64?, endRef: Int64, openedAt: Int64?, closedAt: Int64?, length: Int64? = nil
        ) {
            self.number = number
            self.firstRef = firstRef
            self.endRef = endRef
            self.openedAt = openedAt
            self.closedAt = closedAt
            self.length = length
        }

        /// The refs it holds.
        package var refs: Range<Int64> { (firstRef ?? .min)..<endRef }

        /// Its partitions' names.
        package var outcomesTable: String { "send_outcomes_p\(number)" }
        package var acceptancesTable: String { "send_acceptances_p\(number)" }
    }

    /// What ``decision(now:every:)`` asks for.
    package enum Decision: Sendable, Hashable {
        /// Nothing: the open period is younger than the length asked.
        case none
        /// The first run since the migration: the open period begins now with the length asked, and those before it
        /// are closed now.
        case start(open: Int64, length: Int64)
        /// The open period closes and the next one, with these refs, opens now.
        case roll(closing: Int64, next: Period)
    }

    /// The periods, oldest first; the last is the open one.
    package private(set) var periods: [Period]

    package init(_ periods: [Period]) {
        self.periods = periods.sorted { $0.number < $1.number }
    }

    /// The open period: the one new sends get their refs in.
    package var open: Period? { periods.last }

    /// Whether the open period has lasted `length` at `now`.
    package func decision(now: Int64, every length: Duration) -> Decision {
        guard let open else { return .none }
        let length = Self.microseconds(length)
        guard let openedAt = open.openedAt else { return .start(open: open.number, length: length) }
        guard now - openedAt >= length else { return .none }
        return .roll(
            closing: open.number,
            next: Period(
                number: open.number + 1, firstRef: open.endRef, endRef: open.endRef + Self.span, openedAt: now,
                closedAt: nil, length: length))
    }

    /// The closed periods whose sends were all made before `cutoff`: each may be dropped once the database confirms
    /// that every one of its sends finished before the cutoff too.
    package func droppable(before cutoff: Int64) -> [Period] {
        periods.dropLast().filter { ($0.closedAt ?? .max) < cutoff }
    }

    /// The refs whose sends' outcomes retention leaves to a period's drop rather than deleting row by row: those of the
    /// closed periods whose close is within their length of the cutoff. Such a period goes whole once its last sends
    /// finished before the cutoff, a period later at most. A period closed longer before the cutoff and still here
    /// is held back by a send that runs or finished late, and its finished sends' records go row by row; so do those
    /// of a period closed much later than the cutoff (it stayed open longer than its length: retention did not run),
    /// whose old sends would otherwise wait for its young ones, and those of the open period (a retention shorter than
    /// a period). `nil`: none waits.
    package func rowsWaitingForDrop(before cutoff: Int64) -> Range<Int64>? {
        let waiting = periods.dropLast().filter { period in
            guard let closedAt = period.closedAt else { return false }
            let length = period.length ?? 0
            return closedAt - length <= cutoff && cutoff <= closedAt + length
        }
        // Periods close in the order of their refs: those waiting are neighbours.
        guard let first = waiting.first, let last = waiting.last else { return nil }
        return first.refs.lowerBound..<last.endRef
    }

    private static func microseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    }
}
