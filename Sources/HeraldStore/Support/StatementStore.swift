package import HeraldCore

/// The seam between the store's shared code and a backend: how statements are run, and nothing else.
///
/// The SQL is shared (``StoreSQL``, ``SQLStatement``), and so are the rows (``StoredRow``). What differs is how a backend
/// runs statements: SQLite on its one writer's queue with a group commit and on reader connections, synchronously;
/// PostgreSQL on a pooled connection, asynchronously, under its time limits. A store method whose statements are known
/// before the first runs — one statement, or a fixed list in one transaction — is written once, over this protocol,
/// in `StatementStore+<domain>.swift` beside its SQL; a backend writes its own only where a statement depends on what
/// an earlier one answered inside the transaction, or where it truly differs (PostgreSQL's notifications, locks and
/// partitions; SQLite's quick reads).
package protocol StatementStore: Store {
    associatedtype Row: StoredRow & Sendable

    /// The backend's placeholders.
    var dialect: SQLStatement.Dialect { get }
    var clock: any WallClock { get }

    /// Runs statements that change nothing, in order, and answers the rows of each; `action` names them in errors
    /// ("list API keys").
    func readRows(_ action: String, _ statements: [SQLStatement]) async throws -> [[Row]]

    /// Runs statements in one transaction, in order, and answers the rows of each once it is committed (durably); a
    /// failure rolls back every one.
    func writeRows(_ action: String, _ statements: [SQLStatement]) async throws -> [[Row]]
}

extension StatementStore {
    /// The rows of one statement that changes nothing.
    package func readRows(_ action: String, _ statement: SQLStatement) async throws -> [Row] {
        try await readRows(action, [statement])[0]
    }

    /// The rows of one statement that changes something, once committed.
    package func writeRows(_ action: String, _ statement: SQLStatement) async throws -> [Row] {
        try await writeRows(action, [statement])[0]
    }

    /// The rows of the last of statements run in one transaction: the answer of a change made after its preparation.
    package func writeRows(answeringLastOf action: String, _ statements: [SQLStatement]) async throws -> [Row] {
        try await writeRows(action, statements).last ?? []
    }
}

extension Array {
    /// The rows of two statements run together.
    package var pair: (Element, Element) { (self[0], self[1]) }
}
