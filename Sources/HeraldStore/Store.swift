public import ServiceLifecycle

/// Everything Herald keeps, behind one interface: token registry, delivery records and receipts, Live Activities and
/// broadcast channels, API keys, shared provider tokens and the console's sessions, on one database; and retention,
/// which deletes what is older than an operator keeps.
///
/// Two backends implement it: `SQLiteStore` (HeraldStoreSQLite, the embedded default) and `PostgresStore`
/// (HeraldStorePostgres, for several server instances on one database). The server and the CLI take
/// `some Store` and never a concrete backend, and one conformance suite (`StoreConformance` in HeraldTesting)
/// checks that both behave the same.
///
/// Lifecycle: create the store, start ``run()`` in a long-running task (a `ServiceGroup` entry: a PostgreSQL
/// store cannot lease connections before it runs), call ``migrate()`` once, then use it. Graceful shutdown or
/// cancellation of `run()` closes it.
public protocol Store:
    TokenStore, DeliveryStore, ReceiptStore, ActivityStore, ChannelStore, APIKeyStore, ProviderTokenStore, ConsoleStore,
    IdempotencyStore, RetentionStore, PreferenceStore, WebhookStore, DeliveryTraceStore, ActivityBudgetStore,
    AuditStore, FrequencyCapStore, PushToStartCheckStore, Service
{
    /// Brings the schema up to date by applying, in order, each versioned migration the database lacks.
    ///
    /// Idempotent: running it again applies nothing. Each run is one transaction, and instances that start together
    /// do not race (SQLite's write lock; a PostgreSQL advisory lock).
    /// - Throws: ``StoreError`` `.migrationFailed` (the database is left as it was), `.schemaTooNew` when a newer
    ///   Herald migrated it, `.unavailable` when it cannot be reached.
    func migrate() async throws

    /// Checks that the database answers and reports its schema version: the server's readiness probe.
    /// - Throws: ``StoreError`` `.unavailable` when the database does not answer.
    func health() async throws -> StoreHealth

    /// Closes the database connections. Further calls throw ``StoreError`` `.closed`. Safe to call twice.
    func close() async
}
