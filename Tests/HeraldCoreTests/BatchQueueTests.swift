import HeraldCore
import Testing

@Suite("Core: batch queue")
struct BatchQueueTests {
    @Test("the consumer takes everything pushed so far, in order, and waits when nothing is there")
    func takesInBatches() async throws {
        let queue = BatchQueue<Int>()
        for n in 1...3 { queue.push(n) }
        #expect(try await queue.take() == [1, 2, 3])
        async let next = queue.take()
        queue.push(4)
        #expect(try await next == [4])
    }

    @Test("closing hands back what was not taken and refuses later pushes, so no item waits for a consumer that left")
    func closing() {
        let queue = BatchQueue<Int>()
        #expect(queue.push(1) && queue.push(2))
        #expect(queue.close() == [1, 2])
        #expect(!queue.push(3))
        #expect(queue.close().isEmpty)
    }
}
