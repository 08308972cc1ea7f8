import HeraldCore
import Testing

@Suite("OneShot: a value that arrives once")
struct OneShotTests {
    @Test("waiters before and after the value get the first one; a later fulfil changes nothing")
    func firstWins() async throws {
        let shot = OneShot<Int>()
        #expect(shot.value == nil)
        let early = Task { try await shot.wait() }
        let alsoEarly = Task { await shot.waitEvenIfCancelled() }
        #expect(shot.fulfil(1))
        #expect(!shot.fulfil(2))
        let answers = (try await early.value, await alsoEarly.value)
        #expect(answers == (1, 1))
        #expect(try await shot.wait() == 1 && shot.value == 1)
    }

    // Hung before: wait() ignored cancellation, so a test's time limit could not end a wait for a value that never came.
    @Test("a cancelled wait throws CancellationError; a value that comes later still reaches the other waiters",
          .timeLimit(.minutes(1)))
    func cancelledWait() async throws {
        let shot = OneShot<Int>()
        let cancelled = Task { try await shot.wait() }
        let waiting = Task { try await shot.wait() }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(shot.fulfil(7))
        #expect(try await waiting.value == 7)
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await OneShot<Int>().wait()
        }
        await #expect(throws: CancellationError.self) { try await cancelledFirst.value }
    }

    @Test("waitEvenIfCancelled waits for the value through its task's cancellation", .timeLimit(.minutes(1)))
    func waitEvenIfCancelled() async {
        let shot = OneShot<Int>()
        let waiter = Task { await shot.waitEvenIfCancelled() }
        waiter.cancel()
        shot.fulfil(3)
        #expect(await waiter.value == 3)
    }
}
