/// Presents an ordinary sequence as an `AsyncSequence`, for feeding bulk APIs in tests.
public struct AsyncSequenceAdapter<Base: Sequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
    public typealias Element = Base.Element
    let base: Base

    public struct AsyncIterator: AsyncIteratorProtocol {
        var iterator: Base.Iterator
        public mutating func next() async -> Base.Element? { iterator.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(iterator: base.makeIterator()) }
}

extension Sequence where Self: Sendable, Element: Sendable {
    /// This sequence as an `AsyncSequence`.
    public var asyncSequence: AsyncSequenceAdapter<Self> { AsyncSequenceAdapter(base: self) }
}
