import HeraldCore
import Testing

@Suite("Watched state")
struct WatchedStateTests {
    @Test("waiters go through only once the condition holds, all of them; a later waiter at once")
    func release() async {
        let count = WatchedState(2, readyWhen: { $0 == 0 })
        let released = WatchedState(0, readyWhen: { $0 == 3 })
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    await count.wait()
                    #expect(count.value == 0, "let through only at zero")
                    released.update { $0 += 1 }
                }
            }
            count.update { $0 -= 1 }
            #expect(released.value == 0)
            count.update { $0 -= 1 }
            await released.wait()
        }
        #expect(released.value == 3)
        await count.wait()
        #expect(count.update { $0 } == 0)
    }

    @Test("a cancelled waiter returns without the condition")
    func cancellation() async {
        let gate = WatchedState(false, readyWhen: { $0 })
        let waiter = Task {
            await gate.wait()
            return Task.isCancelled
        }
        waiter.cancel()
        #expect(await waiter.value)
        #expect(gate.value == false)
    }
}

@Suite("Watched state: waits for conditions of their own")
struct WatchedStateConditionTests {
    @Test("each waiter is let through once its own condition holds, with the value it saw; a cancelled one with nil",
          .timeLimit(.minutes(1)))
    func ownConditions() async {
        let count = WatchedState(0, readyWhen: { _ in false })
        let atTwo = Task { await count.wait(until: { $0 >= 2 }) }
        let atFive = Task { await count.wait(until: { $0 >= 5 }) }
        let never = Task { await count.wait(until: { $0 < 0 }) }
        count.update { $0 = 3 }
        #expect(await atTwo.value == 3)
        never.cancel()
        #expect(await never.value == nil)
        count.update { $0 = 5 }
        #expect(await atFive.value == 5)
        #expect(await count.wait(until: { $0 == 5 }) == 5, "at once when it holds")
    }
}
