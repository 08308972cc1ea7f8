import HeraldStore
import Testing

/// ``SendRecordPeriods``' decisions, from the rows of `send_record_periods` alone (PostgreSQL carries them out:
/// SendRecordPeriodTests).
@Suite("Periods of send records: when to roll, what to drop, what waits")
struct SendRecordPeriodsTests {
    static let hour: Int64 = 3_600_000_000
    static let day = 24 * hour
    typealias Period = SendRecordPeriods.Period

    /// As migration 31 leaves them: partition 0 below the next ref, partition 1 from it, neither started.
    static let migrated = SendRecordPeriods([
        Period(number: 1, firstRef: 100, endRef: 100 + SendRecordPeriods.span, openedAt: nil, closedAt: nil),
        Period(number: 0, firstRef: nil, endRef: 100, openedAt: nil, closedAt: nil),
    ])

    @Test("the first run starts the open period; a roll comes once it has lasted the length asked, with the next range")
    func decisions() {
        #expect(Self.migrated.open?.number == 1, "ordered by number")
        #expect(Self.migrated.decision(now: 5 * Self.day, every: .seconds(86_400)) == .start(open: 1, length: Self.day))
        #expect(Self.migrated.droppable(before: 100 * Self.day).isEmpty, "period 0 is not closed before the start")
        #expect(Self.migrated.rowsWaitingForDrop(before: 100 * Self.day) == nil)

        let started = SendRecordPeriods([
            Period(number: 0, firstRef: nil, endRef: 100, openedAt: nil, closedAt: Self.day),
            Period(
                number: 1, firstRef: 100, endRef: 100 + SendRecordPeriods.span, openedAt: Self.day, closedAt: nil,
                length: Self.day),
        ])
        #expect(started.decision(now: 2 * Self.day - 1, every: .seconds(86_400)) == .none)
        #expect(
            started.decision(now: 2 * Self.day, every: .seconds(86_400))
                == .roll(
                    closing: 1,
                    next: Period(
                        number: 2, firstRef: 100 + SendRecordPeriods.span, endRef: 100 + 2 * SendRecordPeriods.span,
                        openedAt: 2 * Self.day, closedAt: nil, length: Self.day)))
        #expect(started.periods[0].refs == Int64.min..<100 && started.periods[1].refs.lowerBound == 100)
        #expect(started.periods[1].outcomesTable == "send_outcomes_p1")
        #expect(started.periods[1].acceptancesTable == "send_acceptances_p1")
    }

    @Test("a closed period may go once it closed before the cutoff; its rows wait for the drop while the cutoff is within its length of its close; the open one never goes")
    func dropsAndWaits() {
        let periods = SendRecordPeriods([
            Period(number: 3, firstRef: 300, endRef: 400, openedAt: 3 * Self.day, closedAt: 4 * Self.day, length: Self.day),
            Period(number: 4, firstRef: 400, endRef: 500, openedAt: 4 * Self.day, closedAt: nil, length: Self.day),
            Period(number: 2, firstRef: 200, endRef: 300, openedAt: 2 * Self.day, closedAt: 3 * Self.day, length: Self.day),
        ])
        #expect(periods.droppable(before: 3 * Self.day).isEmpty, "closed at the cutoff: a send may have ended after it")
        #expect(periods.droppable(before: 3 * Self.day + 1).map(\.number) == [2])
        #expect(periods.droppable(before: 40 * Self.day).map(\.number) == [2, 3], "never the open period")

        // Period 2 closed at day 3 after a day: its sends' rows wait from a cutoff of day 2 (its first sends may be
        // that old) to day 4 (a period after its close: a send of it is late), then go row by row.
        #expect(periods.rowsWaitingForDrop(before: 2 * Self.day - 1) == nil, "none of its sends can be that old")
        #expect(periods.rowsWaitingForDrop(before: 2 * Self.day) == 200..<300)
        #expect(periods.rowsWaitingForDrop(before: 3 * Self.day + 1) == 200..<400)
        #expect(periods.rowsWaitingForDrop(before: 4 * Self.day + 1) == 300..<400, "period 2 is overdue")
        #expect(periods.rowsWaitingForDrop(before: 5 * Self.day + 1) == nil, "both overdue: the open period's go too")

        // A period that stayed open for 100 days (no retention ran) holds sends far older than its close: they go
        // row by row rather than wait for its youngest.
        let long = SendRecordPeriods([
            Period(number: 1, firstRef: 100, endRef: 200, openedAt: Self.day, closedAt: 101 * Self.day, length: Self.day),
            Period(number: 2, firstRef: 200, endRef: 300, openedAt: 101 * Self.day, closedAt: nil, length: Self.day),
        ])
        #expect(long.rowsWaitingForDrop(before: 70 * Self.day) == nil)
        #expect(long.rowsWaitingForDrop(before: 100 * Self.day) == 100..<200)

        // Period 0 has no length: its rows go row by row but at the very moment it closed.
        let first = SendRecordPeriods([
            Period(number: 0, firstRef: nil, endRef: 100, openedAt: nil, closedAt: Self.day),
            Period(number: 1, firstRef: 100, endRef: 200, openedAt: Self.day, closedAt: nil, length: Self.day),
        ])
        #expect(first.rowsWaitingForDrop(before: Self.day - 1) == nil)
        #expect(first.rowsWaitingForDrop(before: Self.day + 1) == nil)
    }
}
