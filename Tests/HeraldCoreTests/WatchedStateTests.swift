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
