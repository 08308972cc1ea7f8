@testable import HeraldSending
import Testing

/// When a paced send records what it gathered (`FanOut.Pace`): in batches of a tenth of a second of its rate, and
/// earlier only when it cannot go on without recording.
@Suite struct PaceTests {
    @Test("a campaign at 1,000 a second starts 10 every 10 ms and records 100 outcomes at a time")
    func batches() {
        let pace = FanOut.Pace(rate: 1000)
        #expect(pace.grant == 10 && pace.period == .milliseconds(10) && pace.recordingBatch == 100)
        #expect(pace.recordingDue(gathered: 100, hasPermit: true, queueEmpty: false))
        #expect(!pace.recordingDue(gathered: 99, hasPermit: true, queueEmpty: false))
    }

    @Test("between two ticks a paced send has no permit to spare, and that is no reason to record")
    func noPermitBetweenTicks() {
        var pace = FanOut.Pace(rate: 1000)
        pace.allowance = 0
        #expect(
            !pace.recordingDue(gathered: 5, hasPermit: false, queueEmpty: false),
            "waiting for its next tick, a send out of permits needs none")
        pace.allowance = 10
        #expect(
            pace.recordingDue(gathered: 5, hasPermit: false, queueEmpty: false),
            "the pace allows a start and the gathered outcomes hold every permit: record to free them")
        #expect(pace.recordingDue(gathered: 1, hasPermit: true, queueEmpty: true), "nothing left to start")
    }

    @Test("below 100 a second, one start at a time, and each outcome recorded when a tenth of a second holds one")
    func slowRates() {
        let pace = FanOut.Pace(rate: 5)
        #expect(pace.grant == 1 && pace.period == .milliseconds(200) && pace.recordingBatch == 1)
        #expect(pace.recordingDue(gathered: 1, hasPermit: true, queueEmpty: false))
    }
}
