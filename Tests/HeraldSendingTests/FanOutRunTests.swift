import Foundation
import HeraldCore
@testable import HeraldSending
import HeraldStore
import Testing

/// A fan-out run's decisions (`FanOutRun`), without a socket or a database: what starts, what is fetched, what a
/// recording holds and where it moves the checkpoint, and when the run ends.
@Suite struct FanOutRunTests {
    static func token(_ n: Int) -> DeviceToken {
        let hex = String(n, radix: 16)
        return try! DeviceToken(hex: String(repeating: "0", count: 64 - hex.count) + hex)
    }

    static func device(_ n: Int) -> DeviceRegistration {
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        return DeviceRegistration(
            registration: TokenRegistration(token: token(n), topic: "com.example.app", environment: .production),
            registeredAt: at, createdAt: at, updatedAt: at)
    }

    static func page(_ numbers: [Int], next: Int?) -> DevicePage {
        DevicePage(
            devices: numbers.map(device),
            next: next.map { DeviceCursor(environment: .production, token: token($0)) })
    }

    static func accepted(_ device: DeviceRegistration) -> DeliveryOutcome {
        DeliveryOutcome(
            token: device.token, environment: device.environment, result: .accepted(apnsID: APNSID()),
            at: Date(timeIntervalSince1970: 1_800_000_000))
    }

    static func run(pageSize: Int = 10, maximumInFlight: Int = 10, rate: Int? = nil, permits: Int? = nil) -> FanOutRun {
        FanOutRun(
            FanOutRun.Settings(pageSize: pageSize, maximumInFlight: maximumInFlight, rate: rate, appPaceShare: nil),
            after: nil, permits: permits ?? maximumInFlight)
    }

    /// Every start the run allows now.
    static func starts(_ run: inout FanOutRun) -> [(page: Int, device: DeviceRegistration)] {
        var started: [(page: Int, device: DeviceRegistration)] = []
        while let next = run.nextStart() { started.append(next) }
        return started
    }

    @Test("the first page is fetched from the start, the next once fewer than a page wait, and one fetch at a time")
    func fetching() {
        var run = Self.run(pageSize: 2, maximumInFlight: 1)
        #expect(run.followUps().fetchAfter == .some(nil), "the first page, from the beginning")
        #expect(run.followUps().fetchAfter == nil, "one fetch at a time")
        run.fetched(Self.page([1, 2], next: 2), done: [])
        #expect(run.followUps().fetchAfter == nil, "a page waits to be sent")
        _ = Self.starts(&run)
        let cursor = DeviceCursor(environment: .production, token: Self.token(2))
        #expect(run.followUps().fetchAfter == .some(cursor), "fewer than a page wait: the next, after the last device")
        run.fetched(Self.page([3], next: nil), done: [])
        #expect(run.followUps().fetchAfter == nil, "the last page came")
    }

    @Test("no more devices in flight than the permits: a device holds its permit until its outcome is recorded")
    func permits() {
        var run = Self.run(maximumInFlight: 10, permits: 2)
        _ = run.followUps()
        run.fetched(Self.page([1, 2, 3, 4, 5], next: nil), done: [])
        let first = Self.starts(&run)
        #expect(first.map(\.device.token) == [Self.token(1), Self.token(2)])
        for start in first { run.gathered(Self.accepted(start.device), page: start.page) }
        #expect(Self.starts(&run).isEmpty, "answered, not recorded: the permits are still held")
        let recording = try! #require(run.followUps().record)
        #expect(recording.outcomes.count == 2)
        #expect(Self.starts(&run).isEmpty, "being recorded")
        run.recorded(count: 2)
        #expect(Self.starts(&run).map(\.device.token) == [Self.token(3), Self.token(4)])
        run.granted(1)
        #expect(Self.starts(&run).map(\.device.token) == [Self.token(5)], "a permit granted starts one more")
        #expect(run.inFlight == 3)
    }

    @Test("what the run tells the budget: what it has in flight and could start, capped by its limit, only when it changed")
    func demand() {
        var run = Self.run(maximumInFlight: 3, permits: 0)
        #expect(run.demand()! == (0, 0))
        #expect(run.demand() == nil, "unchanged")
        _ = run.followUps()
        run.fetched(Self.page([1, 2, 3, 4, 5], next: nil), done: [])
        #expect(run.demand()! == (0, 3), "five could start; the run's limit is three")
        run.granted(2)
        #expect(Self.starts(&run).count == 2)
        #expect(run.demand()! == (2, 3))
    }

    @Test("the checkpoint moves past a page only once it and every page before it are recorded")
    func checkpointOrder() {
        var run = Self.run(pageSize: 2)
        _ = run.followUps()
        run.fetched(Self.page([1, 2], next: 2), done: [])
        var started = Self.starts(&run)
        #expect(run.followUps().fetchAfter != nil)
        run.fetched(Self.page([3, 4], next: nil), done: [])
        started += Self.starts(&run)
        #expect(started.map(\.page) == [0, 0, 1, 1])
        // The second page's answers come first: recorded, but the first page is not.
        for start in started[2...] { run.gathered(Self.accepted(start.device), page: start.page) }
        let early = try! #require(run.followUps().record)
        #expect(early.outcomes.map(\.token) == [Self.token(3), Self.token(4)] && early.checkpoint == nil)
        run.recorded(count: 2)
        for start in started[..<2] { run.gathered(Self.accepted(start.device), page: start.page) }
        let late = try! #require(run.followUps().record)
        #expect(
            late.checkpoint == DeviceCursor(environment: .production, token: Self.token(2)),
            "both pages recorded: after the first page (the last has no cursor after it)")
        run.recorded(count: 2)
        #expect(run.followUps().finished == true)
    }

    @Test("one recording at a time: what settles meanwhile waits for the next")
    func oneRecordingAtATime() {
        var run = Self.run()
        _ = run.followUps()
        run.fetched(Self.page([1, 2], next: nil), done: [])
        let started = Self.starts(&run)
        run.gathered(Self.accepted(started[0].device), page: 0)
        #expect(run.followUps().record?.outcomes.count == 1)
        run.gathered(Self.accepted(started[1].device), page: 0)
        #expect(run.followUps().record == nil, "the first recording is not committed")
        run.recorded(count: 1)
        #expect(run.followUps().record?.outcomes.count == 1)
    }

    @Test("a page whose every device is done moves the checkpoint alone; one with some done sends the others")
    func doneDevices() {
        var run = Self.run(pageSize: 2)
        _ = run.followUps()
        run.fetched(Self.page([1, 2], next: 2), done: [Self.token(1), Self.token(2)])
        let moved = try! #require(run.followUps().record, "a recording with no outcome, for the checkpoint")
        #expect(moved.outcomes.isEmpty && moved.checkpoint == DeviceCursor(environment: .production, token: Self.token(2)))
        run.recorded(count: 0)
        run.fetched(Self.page([3, 4], next: nil), done: [Self.token(3)])
        #expect(Self.starts(&run).map(\.device.token) == [Self.token(4)])
    }

    @Test("a run asked to stop starts nothing more, finishes what is in flight, and did not finish the send")
    func stop() {
        var run = Self.run(pageSize: 4, permits: 1)
        _ = run.followUps()
        run.fetched(Self.page([1, 2, 3], next: 3), done: [])
        let started = Self.starts(&run)
        run.stop()
        #expect(Self.starts(&run).isEmpty)
        var followUps = run.followUps()
        #expect(followUps.fetchAfter == nil && followUps.finished == nil, "one device is still in flight")
        run.gathered(Self.accepted(started[0].device), page: 0)
        followUps = run.followUps()
        #expect(followUps.record?.outcomes.count == 1 && followUps.record?.checkpoint == nil && followUps.finished == nil)
        run.recorded(count: 1)
        #expect(run.followUps().finished == false, "two devices were never sent")
    }

    @Test("a request cancelled in flight frees its permit, gets no outcome, and the send is not finished")
    func cancelledInFlight() {
        var run = Self.run()
        _ = run.followUps()
        run.fetched(Self.page([1, 2], next: nil), done: [])
        let started = Self.starts(&run)
        run.stop()
        run.cancelled()
        run.gathered(Self.accepted(started[1].device), page: 0)
        let recording = try! #require(run.followUps().record)
        #expect(recording.checkpoint == nil, "the page has a device without an outcome: never checkpointed")
        run.recorded(count: 1)
        #expect(run.inFlight == 0)
        #expect(run.followUps().finished == false)
    }

    @Test("a page arriving after the stop is not sent, and leaves the send unfinished")
    func pageAfterStop() {
        var run = Self.run()
        _ = run.followUps()
        run.stop()
        run.fetched(Self.page([1], next: nil), done: [])
        #expect(Self.starts(&run).isEmpty)
        #expect(run.followUps().finished == false)
    }

    @Test("a paced send starts its grant per tick, asks for the next tick once, and records in batches of its rate")
    func paced() {
        var run = Self.run(pageSize: 100, maximumInFlight: 100, rate: 500)
        _ = run.followUps()
        run.fetched(Self.page(Array(1...20), next: nil), done: [])
        let first = Self.starts(&run)
        #expect(first.count == 5, "500 a second: 5 a tick")
        var followUps = run.followUps()
        #expect(followUps.tick == .milliseconds(10))
        for start in first { run.gathered(Self.accepted(start.device), page: start.page) }
        followUps = run.followUps()
        #expect(followUps.tick == nil, "one tick at a time")
        #expect(followUps.record == nil, "5 outcomes: below a tenth of a second of the rate (50)")
        run.ticked()
        #expect(Self.starts(&run).count == 5)
    }

    @Test("the run ends once every device is sent and recorded, and not before")
    func finishes() {
        var run = Self.run()
        _ = run.followUps()
        run.fetched(Self.page([1], next: nil), done: [])
        let started = Self.starts(&run)
        #expect(run.followUps().finished == nil)
        run.gathered(Self.accepted(started[0].device), page: 0)
        #expect(run.followUps().finished == nil, "being recorded")
        run.recorded(count: 1)
        #expect(run.followUps().finished == true)
    }
}
