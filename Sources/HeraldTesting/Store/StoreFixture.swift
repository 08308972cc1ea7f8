public import HeraldCore
public import HeraldStore

/// One empty database for one conformance case, and how to open stores on it.
///
/// A backend's test target makes a fixture per case: a temporary SQLite file, or a fresh PostgreSQL schema.
public struct StoreFixture: Sendable {
    /// Opens a store on the fixture's database. Every call opens another store on the same database, as a second
    /// server instance would.
    public let open: @Sendable (_ clock: any WallClock) throws -> any Store
    /// Deletes the database after the case.
    public let cleanup: @Sendable () async -> Void

    public init(
        open: @escaping @Sendable (_ clock: any WallClock) throws -> any Store,
        cleanup: @escaping @Sendable () async -> Void
    ) {
        self.open = open
        self.cleanup = cleanup
    }
}
