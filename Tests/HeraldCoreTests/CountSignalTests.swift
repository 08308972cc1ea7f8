import HeraldTesting
import Testing

@Suite("CountSignal: waiting on a count in tests", .timeLimit(.minutes(1)))
struct CountSignalTests {
    @Test("a wait returns once the count reaches its threshold, at once when it has")
    func threshold() async {
        let signal = CountSignal()
        let waiter = Task { await signal.wait(untilAtLeast: 2) }
        signal.update(1)
        signal.update(2)
        await waiter.value
        await signal.wait(untilAtLeast: 1)
        #expect(signal.count == 2)
    }

    @Test("a cancelled wait returns, before and while it waits: a test's time limit can end it")
    func cancelled() async {
        let signal = CountSignal()
        let waiting = CountSignal()
        let waiter = Task {
            waiting.update(1)
            await signal.wait(untilAtLeast: 1)
        }
        await waiting.wait(untilAtLeast: 1)
        waiter.cancel()
        await waiter.value
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await signal.wait(untilAtLeast: 1)
        }
        await early.value
        #expect(signal.count == 0, "nothing was counted: the waits ended by cancellation")
    }
}
