/// One versioned step of a backend's schema: applied once, in order, recorded in `herald_migrations`.
package struct Migration: Sendable {
    /// Its version, counting from 1 without gaps.
    package let version: Int
    /// What it does, recorded with it.
    package let name: String
    /// The SQL statements, run in one transaction.
    package let statements: [String]
    /// Statements only PostgreSQL runs, after ``statements`` (stored functions).
    package let postgresStatements: [String]
    /// Statements only SQLite runs, after ``statements``: where the two backends' DDL differs (column types,
    /// `WITHOUT ROWID`, triggers).
    package let sqliteStatements: [String]

    package init(
        version: Int, name: String, statements: [String], postgresStatements: [String] = [],
        sqliteStatements: [String] = []
    ) {
        self.version = version
        self.name = name
        self.statements = statements
        self.postgresStatements = postgresStatements
        self.sqliteStatements = sqliteStatements
    }

    /// The migrations of a list that a database with these versions applied still lacks, in order.
    /// - Throws: ``StoreError`` `.schemaTooNew` when the database has a version this build does not know.
    package static func pending(_ migrations: [Migration], applied: Set<Int>) throws -> [Migration] {
        let latest = migrations.map(\.version).max() ?? 0
        if let unknown = applied.first(where: { $0 > latest }) {
            throw StoreError(
                .schemaTooNew,
                "The database has schema version \(unknown), newer than the \(latest) this Herald knows: upgrade Herald, or point it at another database."
            )
        }
        return migrations.filter { !applied.contains($0.version) }.sorted { $0.version < $1.version }
    }
}

/// A store that can stop migrating at a version: what the upgrade tests need to fill a database as an older Herald
/// left it. ``Store/migrate()`` applies every migration.
package protocol VersionedMigrations: Sendable {
    /// Applies, in one transaction, the migrations up to and including `version` that the database lacks.
    func migrate(through version: Int) async throws

    /// Runs SQL as it is, in one transaction: for tests that write the rows of an older schema, which today's
    /// statements no longer fit.
    func executeRaw(_ statements: [String]) async throws

    /// The number of rows of each of Herald's tables, by name: for upgrade tests that check nothing was lost.
    func rowCounts() async throws -> [String: Int]
}
