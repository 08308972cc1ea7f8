import DequeModule
import HeraldCore
import HeraldStore

/// The decisions of one ``FanOut`` run, apart from its I/O: which device starts next, when a page is fetched, what a
/// recording holds and where it moves the checkpoint, when the run asks the budget for permits, and when it ends.
///
/// A value that the run's loop feeds with what happened (a page arrived, an outcome settled, a recording committed,
/// permits granted, a tick of the pace) and asks what to do now; it does no I/O and holds no task, so every rule here is
/// tested without a socket or a database (`FanOutRunTests`), as ``HeraldHTTP2/HTTP2ConnectionState`` is for HTTP/2.
///
/// A device holds a permit from its start until its outcome is recorded: the run never has more devices sent and not
/// recorded than the permits it holds, which is what bounds the re-sends after a `kill -9`.
struct FanOutRun {
    /// What the run is: its limits and pacing.
    struct Settings {
        /// Devices fetched per page, and the most outcomes queued before another page is fetched.
        var pageSize: Int
        /// The most devices the run may have sent and not yet recorded.
        var maximumInFlight: Int
        /// The send's `rate`, in notifications a second; `nil`: as fast as the permits allow.
        var rate: Int?
        /// The share of its app's push-to-start pace the run may always ask for; `nil` when the pace does not apply.
        var appPaceShare: Int?
    }

    /// A recording to make: the outcomes gathered, and the checkpoint to commit with them.
    struct Recording: Equatable {
        var outcomes: [DeliveryOutcome]
        /// After the last page whose every device is in this recording or an earlier one; `nil`: unchanged.
        var checkpoint: DeviceCursor?
    }

    /// What the run starts besides sends, once it has started what it could.
    struct FollowUps {
        /// Sleep this long, then report ``FanOutRun/ticked()``.
        var tick: Duration?
        /// Take this many starts from the app's push-to-start pace, then report ``FanOutRun/paced(_:)``.
        var takeAppPace: Int?
        /// Fetch the devices after this cursor (`.some(nil)`: the first page), then report ``FanOutRun/fetched(_:)``.
        var fetchAfter: DeviceCursor??
        /// Record these, then report ``FanOutRun/recorded(count:)``.
        var record: Recording?
        /// The run is over: `true` when every device was sent and recorded.
        var finished: Bool?
    }

    /// A fetched page: how many of its devices are not yet in a recording, and the cursor after it.
    private struct PageProgress {
        var unbatched: Int
        var next: DeviceCursor?
    }

    let settings: Settings
    /// Devices fetched and not yet started, with the number of their page.
    private var queue = Deque<(page: Int, device: DeviceRegistration)>()
    private var cursor: DeviceCursor?
    private var fetching = false
    private var exhausted = false
    private var pagesFetched = 0
    private var pages: [Int: PageProgress] = [:]
    private var nextPageToCheckpoint = 0
    private var pendingCheckpoint: DeviceCursor?
    private var ready: [DeliveryOutcome] = []
    private var readyPages: [Int] = []
    private var recording = false
    private var stopping = false
    /// Whether a device was left without an outcome: the run did not finish the send.
    private var dropped = false
    private var pace: FanOut.Pace?
    private var appAllowance: Int
    private var takingAppPace = false
    private var reported: (inUse: Int, wanted: Int)?
    /// The permits the run holds: its own limit without a budget, else what the budget granted.
    private(set) var permits: Int
    /// Devices started and not yet recorded: in flight, answered, or in a recording.
    private(set) var inFlight = 0

    /// - Parameters:
    ///   - after: Where the run starts: a resumed send's checkpoint, `nil` from the beginning.
    ///   - permits: What the run may have in flight before any budget grants more.
    init(_ settings: Settings, after: DeviceCursor?, permits: Int) {
        self.settings = settings
        cursor = after
        self.permits = permits
        pace = settings.rate.map(FanOut.Pace.init(rate:))
        appAllowance = settings.appPaceShare == nil ? Int.max : 0
    }

    // MARK: What to do

    /// What the run could have in flight now, when it changed since last asked: tell the budget, and report what it
    /// answers with ``granted(_:)``. A paced send asks only for what its rate allows.
    mutating func demand() -> (inUse: Int, wanted: Int)? {
        let startable = min(
            queue.count, pace?.allowance ?? Int.max, settings.appPaceShare.map { max(appAllowance, $0) } ?? Int.max)
        let wanted = min(inFlight + startable, settings.maximumInFlight)
        if let reported, reported == (inFlight, wanted) { return nil }
        reported = (inFlight, wanted)
        return (inFlight, wanted)
    }

    /// The next device to send now, if a permit, the pace and the app's pace allow one; its permit is taken.
    mutating func nextStart() -> (page: Int, device: DeviceRegistration)? {
        guard inFlight < permits, pace.map({ $0.allowance > 0 }) ?? true, appAllowance > 0,
            let next = queue.popFirst()
        else { return nil }
        pace?.allowance -= 1
        if settings.appPaceShare != nil { appAllowance -= 1 }
        inFlight += 1
        return next
    }

    /// What to start once the sends are started: a tick, a take from the app's pace, a fetch, a recording, or the end.
    mutating func followUps() -> FollowUps {
        var followUps = FollowUps()
        if let current = pace, current.allowance == 0, !current.ticking, !queue.isEmpty {
            pace?.ticking = true
            followUps.tick = current.period
        }
        if settings.appPaceShare != nil, appAllowance == 0, !takingAppPace, !queue.isEmpty, inFlight < permits {
            takingAppPace = true
            followUps.takeAppPace = queue.count
        }
        if !fetching, !exhausted, !stopping, queue.count < settings.pageSize {
            fetching = true
            followUps.fetchAfter = .some(cursor)
        }
        // A paced send records once it has gathered a batch, or when it cannot go on without recording.
        let batchDue =
            pace.map { $0.recordingDue(gathered: ready.count, hasPermit: inFlight < permits, queueEmpty: queue.isEmpty) }
            ?? true
        if !recording, (!ready.isEmpty && batchDue) || pendingCheckpoint != nil {
            followUps.record = takeRecording()
            recording = true
        }
        if !fetching, !recording, !takingAppPace, inFlight == 0, queue.isEmpty, exhausted || stopping {
            followUps.finished = exhausted && !dropped
        }
        return followUps
    }

    /// The outcomes gathered, and the checkpoint after the whole pages whose every device they (or earlier recordings)
    /// hold: recordings are made one at a time, in order, so the checkpoint is committed with the last of them.
    private mutating func takeRecording() -> Recording {
        for page in readyPages { pages[page]!.unbatched -= 1 }
        var checkpoint = pendingCheckpoint
        while let page = pages[nextPageToCheckpoint], page.unbatched == 0 {
            if let next = page.next { checkpoint = next }
            pages[nextPageToCheckpoint] = nil
            nextPageToCheckpoint += 1
        }
        defer {
            ready = []
            readyPages = []
            pendingCheckpoint = nil
        }
        return Recording(outcomes: ready, checkpoint: checkpoint)
    }

    // MARK: What happened

    /// Nothing more is fetched or started; what is in flight ends (answered, or cancelled: ``cancelled()``) and what
    /// settled is recorded. A graceful shutdown, or the requests in flight being cancelled.
    mutating func stop() {
        guard !stopping else { return }
        stopping = true
        dropped = dropped || !queue.isEmpty
        queue.removeAll()
    }

    /// A page arrived; `done` are its devices that need no send (an outcome already, moved, or capped).
    mutating func fetched(_ page: DevicePage, done: Set<DeviceToken>) {
        fetching = false
        cursor = page.next
        exhausted = page.next == nil
        let devices = done.isEmpty ? page.devices : page.devices.filter { !done.contains($0.token) }
        pages[pagesFetched] = PageProgress(unbatched: devices.count, next: page.next)
        if devices.isEmpty, pagesFetched == nextPageToCheckpoint, page.next != nil {
            // Every device of the page was done before: only the checkpoint moves.
            pages[pagesFetched] = nil
            nextPageToCheckpoint += 1
            pendingCheckpoint = page.next
        }
        if stopping {
            dropped = dropped || !devices.isEmpty
        } else {
            for device in devices { queue.append((pagesFetched, device)) }
        }
        pagesFetched += 1
    }

    /// A device's outcome settled: it waits for the next recording.
    mutating func gathered(_ outcome: DeliveryOutcome, page: Int) {
        ready.append(outcome)
        readyPages.append(page)
    }

    /// A device's request was cancelled before APNs answered: no outcome (APNs may or may not have it), its permit is
    /// free, and its page is never checkpointed, so a later run sends it again.
    mutating func cancelled() {
        inFlight -= 1
        dropped = true
    }

    /// A recording of `count` outcomes committed: their permits are free.
    mutating func recorded(count: Int) {
        recording = false
        inFlight -= count
    }

    /// The budget granted (or, negative, took back) permits.
    mutating func granted(_ count: Int) {
        permits += count
    }

    /// The app's push-to-start pace granted starts (0: its second was spent, and the next one has begun).
    mutating func paced(_ granted: Int) {
        takingAppPace = false
        appAllowance += granted
    }

    /// The pace's period passed: its next starts are allowed.
    mutating func ticked() {
        guard var current = pace else { return }
        current.ticking = false
        current.allowance = current.grant
        pace = current
    }
}
