/// What a store reports when it is reachable: the answer behind a server's `/ready`.
public struct StoreHealth: Sendable, Hashable, CustomStringConvertible {
    /// `sqlite` or `postgres`.
    public var backend: String
    /// The highest migration applied to the database.
    public var schemaVersion: Int
    /// The highest migration this build knows. When it is above ``schemaVersion``, `migrate()` has not run yet.
    public var latestSchemaVersion: Int

    public init(backend: String, schemaVersion: Int, latestSchemaVersion: Int) {
        self.backend = backend
        self.schemaVersion = schemaVersion
        self.latestSchemaVersion = latestSchemaVersion
    }

    /// Whether every migration this build knows is applied.
    public var isMigrated: Bool { schemaVersion >= latestSchemaVersion }

    public var description: String { "\(backend) schema \(schemaVersion)/\(latestSchemaVersion)" }
}
