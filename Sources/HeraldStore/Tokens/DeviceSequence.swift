/// The registrations a query matches, fetched page by page: see ``TokenStore/allDevices(matching:pageSize:)``.
///
/// Iteration throws what ``TokenStore/devices(matching:after:limit:)`` throws, and stops at cancellation.
public struct DeviceSequence: AsyncSequence, Sendable {
    public typealias Element = DeviceRegistration

    private let store: any TokenStore
    private let query: DeviceQuery
    private let pageSize: Int

    init(store: any TokenStore, query: DeviceQuery, pageSize: Int) {
        self.store = store
        self.query = query
        self.pageSize = Swift.max(1, pageSize)
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(store: store, query: query, pageSize: pageSize)
    }

    /// Walks the pages; holds one page at a time.
    public struct Iterator: AsyncIteratorProtocol {
        private let store: any TokenStore
        private let query: DeviceQuery
        private let pageSize: Int
        private var buffer: [DeviceRegistration] = []
        private var index = 0
        private var cursor: DeviceCursor?
        private var finished = false

        init(store: any TokenStore, query: DeviceQuery, pageSize: Int) {
            self.store = store
            self.query = query
            self.pageSize = pageSize
        }

        public mutating func next() async throws -> DeviceRegistration? {
            if index == buffer.count {
                buffer = try await nextPage()
                index = 0
                if buffer.isEmpty { return nil }
            }
            defer { index += 1 }
            return buffer[index]
        }

        /// The rest of the current page, or the next page: an empty array when there are no more.
        ///
        /// What a fan-out hands to its senders, one batch per round trip.
        public mutating func nextPage() async throws -> [DeviceRegistration] {
            if index < buffer.count {
                defer { (buffer, index) = ([], 0) }
                return Array(buffer[index...])
            }
            // A page may be empty without being the last (an explicit token list whose chunk matched nothing).
            while !finished, !Task.isCancelled {
                let page = try await store.devices(matching: query, after: cursor, limit: pageSize)
                cursor = page.next
                finished = page.next == nil
                if !page.devices.isEmpty { return page.devices }
            }
            return []
        }
    }
}
