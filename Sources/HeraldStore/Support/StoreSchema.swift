/// The schema both backends share, as versioned migrations. Append new migrations; never edit an applied one.
///
/// The DDL is the common ground of SQLite and PostgreSQL: `TEXT` and `BIGINT` columns (SQLite gives `BIGINT` integer
/// affinity), times as integer microseconds since 1970 UTC, lists as JSON text. docs/storage.md describes it.
package enum StoreSchema {
    /// The table that records which migrations are applied.
    package static let createMigrationsTable = """
        CREATE TABLE IF NOT EXISTS herald_migrations (\
        version BIGINT NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)
        """

    /// The applied versions.
    package static let selectVersions = "SELECT version FROM herald_migrations ORDER BY version"

    /// Records a migration as applied.
    package static func recordMigration(
        _ migration: Migration, at microseconds: Int64, _ dialect: SQLStatement.Dialect
    ) -> SQLStatement {
        SQLStatement(
            dialect, "INSERT INTO herald_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
            [.integer(Int64(migration.version)), .text(migration.name), .integer(microseconds)])
    }

    /// Every migration, in order.
    package static let migrations: [Migration] = [
        Migration(
            version: 1, name: "token registry, delivery records, API keys, provider tokens",
            statements: [
                """
                CREATE TABLE devices (
                    token TEXT NOT NULL PRIMARY KEY,
                    topic TEXT NOT NULL,
                    environment TEXT NOT NULL CHECK (environment IN ('development', 'production')),
                    token_kind TEXT NOT NULL,
                    user_id TEXT,
                    installation_id TEXT,
                    preferred_languages TEXT NOT NULL DEFAULT '[]',
                    app_version TEXT,
                    platform TEXT,
                    tags TEXT NOT NULL DEFAULT '[]',
                    registered_at BIGINT NOT NULL,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    invalidated_at BIGINT,
                    invalidation_reason TEXT,
                    apns_timestamp BIGINT
                )
                """,
                // Fan-out to a topic pages through this index in (environment, token) order.
                "CREATE INDEX devices_topic_environment_token ON devices (topic, environment, token)",
                "CREATE INDEX devices_user_token ON devices (user_id, token) WHERE user_id IS NOT NULL",
                """
                CREATE INDEX devices_installation ON devices (installation_id, topic, token_kind) \
                WHERE installation_id IS NOT NULL
                """,
                "CREATE INDEX devices_invalidated_at ON devices (invalidated_at) WHERE invalidated_at IS NOT NULL",
                """
                CREATE TABLE device_tags (
                    tag TEXT NOT NULL,
                    token TEXT NOT NULL REFERENCES devices (token) ON DELETE CASCADE,
                    PRIMARY KEY (tag, token)
                )
                """,
                "CREATE INDEX device_tags_token ON device_tags (token)",
                """
                CREATE TABLE sends (
                    id TEXT NOT NULL PRIMARY KEY,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    target TEXT NOT NULL,
                    summary TEXT NOT NULL,
                    job TEXT,
                    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
                    target_count BIGINT,
                    accepted BIGINT NOT NULL DEFAULT 0,
                    rejected BIGINT NOT NULL DEFAULT 0,
                    failed BIGINT NOT NULL DEFAULT 0,
                    checkpoint TEXT,
                    worker TEXT,
                    lease_until BIGINT,
                    message TEXT
                )
                """,
                "CREATE INDEX sends_waiting ON sends (created_at, id) WHERE status IN ('queued', 'running')",
                """
                CREATE TABLE send_outcomes (
                    send_id TEXT NOT NULL REFERENCES sends (id) ON DELETE CASCADE,
                    seq BIGINT NOT NULL,
                    token TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    apns_id TEXT,
                    status BIGINT,
                    reason TEXT,
                    apns_timestamp BIGINT,
                    message TEXT,
                    at BIGINT NOT NULL,
                    PRIMARY KEY (send_id, seq)
                )
                """,
                """
                CREATE TABLE api_keys (
                    id TEXT NOT NULL PRIMARY KEY,
                    name TEXT NOT NULL,
                    secret_hash TEXT NOT NULL UNIQUE,
                    scopes TEXT NOT NULL,
                    prefix TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    revoked_at BIGINT
                )
                """,
                """
                CREATE TABLE provider_tokens (
                    key_id TEXT NOT NULL PRIMARY KEY,
                    team_id TEXT NOT NULL,
                    jwt TEXT NOT NULL,
                    issued_at BIGINT NOT NULL
                )
                """,
            ]),
        Migration(
            version: 2, name: "API keys: salted HMAC-SHA256 hashes, lookup ids, no secret characters in clear",
            statements: [
                // Existing rows keep their unsalted SHA-256 ('sha256') until first used, then are re-hashed.
                "ALTER TABLE api_keys ADD COLUMN hash_scheme TEXT NOT NULL DEFAULT 'sha256'",
                "ALTER TABLE api_keys ADD COLUMN lookup_id TEXT",
                "ALTER TABLE api_keys ADD COLUMN salt TEXT NOT NULL DEFAULT ''",
                // Schema 1 kept a secret's first characters in clear to recognise the key.
                "UPDATE api_keys SET prefix = ''",
                "CREATE INDEX api_keys_lookup_id ON api_keys (lookup_id)",
            ]),
        Migration(
            version: 3, name: "send outcomes record what the server did about them (removed, kept, environment corrected)",
            statements: ["ALTER TABLE send_outcomes ADD COLUMN action TEXT"]),
        Migration(
            version: 4, name: "one outcome per send and device, so a resumed send skips the devices already done",
            statements: [
                // Sends resumed before this version may have recorded a device twice: keep its first outcome. The
                // temporary index makes the clean-up a lookup per row instead of a scan.
                "CREATE INDEX send_outcomes_send_token_scan ON send_outcomes (send_id, token)",
                """
                DELETE FROM send_outcomes WHERE EXISTS (SELECT 1 FROM send_outcomes earlier \
                WHERE earlier.send_id = send_outcomes.send_id AND earlier.token = send_outcomes.token \
                AND earlier.seq < send_outcomes.seq)
                """,
                "DROP INDEX send_outcomes_send_token_scan",
                "CREATE UNIQUE INDEX send_outcomes_send_token ON send_outcomes (send_id, token)",
            ]),
        Migration(
            version: 5, name: "PostgreSQL stores a registration in one round trip (herald_register)",
            statements: [],
            postgresStatements: [
                // The locking read, the upsert, the tag rows and the move-aside of StoreSQL's statements, in one call:
                // one round trip and one implicit transaction instead of six. See StoreSQL.register.
                registerFunction(columns: registrationColumns(upTo: 5))
            ]),
        Migration(
            version: 6, name: "console: sessions, one-time sign-in links, and the indexes of its pages",
            statements: [
                // Only the SHA-256 of a session id is stored: reading the table does not sign anyone in.
                """
                CREATE TABLE console_sessions (
                    id_hash TEXT NOT NULL PRIMARY KEY,
                    csrf_token TEXT NOT NULL,
                    api_key_id TEXT,
                    created_at BIGINT NOT NULL,
                    last_seen_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX console_sessions_last_seen ON console_sessions (last_seen_at)",
                """
                CREATE TABLE console_sign_in_links (
                    token_hash TEXT NOT NULL PRIMARY KEY,
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    used_at BIGINT
                )
                """,
                // New devices per day (overview).
                "CREATE INDEX devices_created_at ON devices (created_at)",
                // The sends list, newest first, and the overview's sends per day.
                "CREATE INDEX sends_created ON sends (created_at, id)",
                // A device's deliveries.
                "CREATE INDEX send_outcomes_token_at ON send_outcomes (token, at)",
                // Rejection reasons of the last days: rejections are few among outcomes, so the index stays small.
                "CREATE INDEX send_outcomes_rejected_at ON send_outcomes (at) WHERE outcome = 'rejected'",
            ]),
        Migration(
            version: 7, name: "delivery receipts (events and per-send counts), and cancelled sends",
            statements: [
                // A send may be cancelled: the status column's CHECK gains 'cancelled'. SQLite cannot alter a CHECK,
                // and rebuilding the table would cascade-delete its outcomes (foreign keys are on and cannot be
                // turned off inside the migration's transaction), so both backends swap the column instead: add the
                // new one, copy, drop the old (with its CHECK and the partial index that names it), rename. Rows and
                // outcomes stay as they are; the column moves last, which no statement depends on.
                "DROP INDEX sends_waiting",
                """
                ALTER TABLE sends ADD COLUMN status_new TEXT NOT NULL DEFAULT 'queued' \
                CHECK (status_new IN ('queued', 'running', 'completed', 'failed', 'cancelled'))
                """,
                "UPDATE sends SET status_new = status",
                "ALTER TABLE sends DROP COLUMN status",
                "ALTER TABLE sends RENAME COLUMN status_new TO status",
                "CREATE INDEX sends_waiting ON sends (created_at, id) WHERE status IN ('queued', 'running')",
                // What devices reported about a send's notifications: one row per send, device, kind and action
                // identifier ('' for the other kinds), so the same event twice is stored and counted once.
                """
                CREATE TABLE receipt_events (
                    send_id TEXT NOT NULL REFERENCES sends (id) ON DELETE CASCADE,
                    token TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('received', 'opened', 'action', 'dismissed')),
                    action TEXT NOT NULL DEFAULT '',
                    at BIGINT NOT NULL,
                    recorded_at BIGINT NOT NULL,
                    PRIMARY KEY (send_id, token, kind, action)
                )
                """,
                // The counts a send's page shows, kept as events are recorded: a page reads one row, not a count of
                // a million events. Apart from `sends`, so reports never wait on a worker's outcome batches.
                """
                CREATE TABLE send_receipts (
                    send_id TEXT NOT NULL PRIMARY KEY REFERENCES sends (id) ON DELETE CASCADE,
                    received BIGINT NOT NULL DEFAULT 0,
                    opened BIGINT NOT NULL DEFAULT 0,
                    actions BIGINT NOT NULL DEFAULT 0,
                    dismissed BIGINT NOT NULL DEFAULT 0
                )
                """,
            ]),
        Migration(
            version: 8,
            name: "registrations carry a time zone and Live Activity ids; sends carry a due time (scheduled sends)",
            statements: [
                "ALTER TABLE devices ADD COLUMN time_zone TEXT",
                "ALTER TABLE devices ADD COLUMN activity_type TEXT",
                "ALTER TABLE devices ADD COLUMN activity_id TEXT",
                // The activity API finds an activity's update tokens by the app's own activity id.
                "CREATE INDEX devices_activity ON devices (topic, activity_id) WHERE activity_id IS NOT NULL",
                // When a queued send may start (NULL: at once), and for a send at each device's local time, the
                // instant through which its time zones were sent.
                "ALTER TABLE sends ADD COLUMN send_at BIGINT",
                "ALTER TABLE sends ADD COLUMN sent_through BIGINT",
            ],
            postgresStatements: [
                "DROP FUNCTION herald_register(TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, BIGINT)",
                registerFunction(columns: registrationColumns(upTo: 8)),
            ]),
        Migration(
            version: 9, name: "Live Activities started through the API",
            statements: [
                """
                CREATE TABLE activities (
                    topic TEXT NOT NULL,
                    id TEXT NOT NULL,
                    activity_type TEXT NOT NULL,
                    status TEXT NOT NULL CHECK (status IN ('active', 'ended')),
                    updates BIGINT NOT NULL DEFAULT 0,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    ended_at BIGINT,
                    PRIMARY KEY (topic, id)
                )
                """
            ]),
        Migration(
            version: 10, name: "broadcast channels created through the API",
            statements: [
                // APNs never reissues an id, even across environments in practice: the id alone is the key, and a
                // deleted channel keeps its row so the id stays refused.
                """
                CREATE TABLE channels (
                    id TEXT NOT NULL PRIMARY KEY,
                    topic TEXT NOT NULL,
                    environment TEXT NOT NULL CHECK (environment IN ('development', 'production')),
                    storage_policy BIGINT NOT NULL CHECK (storage_policy IN (0, 1)),
                    created_at BIGINT NOT NULL,
                    deleted_at BIGINT
                )
                """,
                "CREATE INDEX channels_live ON channels (topic, environment, id) WHERE deleted_at IS NULL",
            ]),
        Migration(
            version: 11, name: "console: devices found by the last 8 hex digits of their token",
            statements: [
                // StoreSQL.tokenSuffixExpression without the table alias: the planner matches the expression.
                "CREATE INDEX devices_token_suffix ON devices (substr(token, length(token) - 7))"
            ]),
        Migration(
            version: 12, name: "activities listed newest first per app, and per app and status",
            statements: [
                // GET /api/activities and the console's Live Activities page read a page newest first from the
                // cursor on: one index for every activity of an app, one for its running or its ended ones (a status
                // that is rare in an app's history would otherwise cost a scan of the other).
                "CREATE INDEX activities_newest ON activities (topic, created_at, id)",
                "CREATE INDEX activities_by_status ON activities (topic, status, created_at, id)",
            ]),
        Migration(
            version: 13,
            name: "PostgreSQL stores concurrent registrations in one call and one commit (herald_register_batch)",
            statements: [],
            postgresStatements: [
                // Group commit (PostgresStore's GroupCommit of registrations): one call, one transaction and one WAL
                // flush per batch of registrations instead of one each. See StoreSQL.registerBatch.
                registerBatchFunction(columns: registrationColumns(upTo: 13))
            ]),
        Migration(
            version: 14, name: "sends wait in the scheduler's lanes",
            statements: [
                // A send recorded finished (inline) is in no queue: the column's default. Every queued send stores
                // its job, so the sends an earlier version queued go to the background lane.
                "ALTER TABLE sends ADD COLUMN lane TEXT NOT NULL DEFAULT 'inline'",
                "UPDATE sends SET lane = 'background' WHERE job IS NOT NULL",
                // A worker claims the oldest waiting send of the lanes it has room in.
                "CREATE INDEX sends_waiting_lane ON sends (lane, created_at, id) WHERE status IN ('queued', 'running')",
            ]),
        Migration(
            version: 15, name: "large sends are cut into shards any worker of any instance can claim",
            statements: [
                // How many shards a send was cut into; NULL: it runs whole.
                "ALTER TABLE sends ADD COLUMN shard_count BIGINT",
                """
                CREATE TABLE send_shards (
                    send_id TEXT NOT NULL REFERENCES sends (id) ON DELETE CASCADE,
                    shard BIGINT NOT NULL,
                    after_cursor TEXT,
                    through_cursor TEXT,
                    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done')),
                    worker TEXT,
                    lease_until BIGINT,
                    checkpoint TEXT,
                    size BIGINT NOT NULL,
                    recorded BIGINT NOT NULL DEFAULT 0,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (send_id, shard)
                )
                """,
                // Claims look only at the shards not done yet.
                "CREATE INDEX send_shards_open ON send_shards (send_id, shard) WHERE status <> 'done'",
            ]),
        Migration(
            version: 16, name: "requests with an Idempotency-Key keep their answer for retries",
            statements: [
                """
                CREATE TABLE idempotency_keys (
                    scope TEXT NOT NULL,
                    key TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
                    created_at BIGINT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    response_status BIGINT,
                    response_body TEXT,
                    response_location TEXT,
                    PRIMARY KEY (scope, key)
                )
                """,
                // Expired keys are deleted oldest first, in batches.
                "CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at)",
            ]),
        Migration(
            version: 17, name: "retention: finished sends whose outcomes and receipt events are deleted are marked",
            statements: [
                // When retention deleted a finished send's outcomes, and its receipt events; NULL while it has them.
                "ALTER TABLE sends ADD COLUMN outcomes_deleted_at BIGINT",
                "ALTER TABLE sends ADD COLUMN receipts_deleted_at BIGINT",
                // Retention walks the finished sends that still have outcomes (or events) from the one that finished
                // first: a send leaves the index once marked, so no batch scans the sends done before it.
                """
                CREATE INDEX sends_outcomes_kept ON sends (updated_at) \
                WHERE outcomes_deleted_at IS NULL AND status IN ('completed', 'failed', 'cancelled')
                """,
                """
                CREATE INDEX sends_receipts_kept ON sends (updated_at) \
                WHERE receipts_deleted_at IS NULL AND status IN ('completed', 'failed', 'cancelled')
                """,
            ]),
        Migration(
            version: 18, name: "a person's choices of which notification categories an app may send them",
            statements: [
                // The subject is 'u:' and a user id, 'i:' and an installation id, or 't:' and a token: DeviceQuery's
                // preference filter computes the same key from a device row and probes this primary key.
                """
                CREATE TABLE preference_choices (
                    topic TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    category TEXT NOT NULL,
                    enabled BIGINT NOT NULL CHECK (enabled IN (0, 1)),
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (topic, subject, category)
                )
                """,
                // The devices a send left out because their person opted out of its category.
                "ALTER TABLE sends ADD COLUMN suppressed_preference BIGINT NOT NULL DEFAULT 0",
            ]),
        Migration(
            version: 19, name: "signed webhooks: endpoints per app, their outbox of events, and their deliveries",
            statements: [
                // Events are listed as comma-separated names; secrets are kept as they are, since they sign.
                """
                CREATE TABLE webhook_endpoints (
                    id TEXT NOT NULL PRIMARY KEY,
                    app TEXT NOT NULL,
                    url TEXT NOT NULL,
                    events TEXT NOT NULL,
                    description TEXT NOT NULL DEFAULT '',
                    secret TEXT NOT NULL,
                    previous_secret TEXT,
                    previous_secret_expires_at BIGINT,
                    status TEXT NOT NULL CHECK (status IN ('active', 'paused')),
                    paused_reason TEXT,
                    paused_at BIGINT,
                    consecutive_failures BIGINT NOT NULL DEFAULT 0,
                    first_failure_at BIGINT,
                    next_attempt_at BIGINT NOT NULL,
                    lease_owner TEXT,
                    lease_until BIGINT,
                    created_at BIGINT NOT NULL,
                    updated_at BIGINT NOT NULL
                )
                """,
                // One row per endpoint and event. INTEGER PRIMARY KEY is SQLite's rowid, numbered as written;
                // PostgreSQL numbers it from a sequence (below). No foreign key: an endpoint deleted while a send
                // records its outcomes must not fail the outcomes' transaction; retention deletes such leftovers.
                """
                CREATE TABLE webhook_events (
                    id INTEGER PRIMARY KEY,
                    endpoint_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    app TEXT NOT NULL,
                    send_id TEXT,
                    data TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'dead')),
                    attempts BIGINT NOT NULL DEFAULT 0,
                    delivered_at BIGINT
                )
                """,
                "CREATE INDEX webhook_events_pending ON webhook_events (endpoint_id, id) WHERE status = 'pending'",
                "CREATE INDEX webhook_events_dead ON webhook_events (endpoint_id, id) WHERE status = 'dead'",
                "CREATE INDEX webhook_events_delivered ON webhook_events (delivered_at) WHERE status = 'delivered'",
                """
                CREATE TABLE webhook_deliveries (
                    id INTEGER PRIMARY KEY,
                    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
                    at BIGINT NOT NULL,
                    event_count BIGINT NOT NULL,
                    status_code BIGINT,
                    error TEXT,
                    latency_us BIGINT NOT NULL,
                    delivered BIGINT NOT NULL,
                    worker TEXT NOT NULL
                )
                """,
                "CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id)",
                "CREATE INDEX webhook_deliveries_at ON webhook_deliveries (at)",
            ],
            postgresStatements: ["webhook_events", "webhook_deliveries"].flatMap { table in
                [
                    "ALTER TABLE \(table) ALTER COLUMN id TYPE BIGINT",
                    "CREATE SEQUENCE \(table)_id_seq OWNED BY \(table).id",
                    "ALTER TABLE \(table) ALTER COLUMN id SET DEFAULT nextval('\(table)_id_seq')",
                ]
            }),
        Migration(
            version: 20, name: "delivery trace: the sandbox's apns-unique-id, and the attempts of retried notifications",
            statements: [
                "ALTER TABLE send_outcomes ADD COLUMN apns_unique_id TEXT",
                // Only notifications that needed more than one attempt have rows (DeliveryAttempt): a fan-out whose
                // notifications APNs accepts at once writes none. Retention deletes them with the send's outcomes.
                """
                CREATE TABLE delivery_attempts (
                    send_id TEXT NOT NULL,
                    token TEXT NOT NULL,
                    attempt BIGINT NOT NULL,
                    at BIGINT NOT NULL,
                    environment TEXT NOT NULL,
                    connection BIGINT,
                    status BIGINT,
                    reason TEXT,
                    message TEXT,
                    apns_unique_id TEXT,
                    retry_after_ms BIGINT,
                    PRIMARY KEY (send_id, token, attempt)
                )
                """,
            ]),
        Migration(
            version: 21, name: "Live Activity update budgets: priority-10 updates per activity and hour",
            statements: [
                // One row per activity (or, for push-to-start, per app: activity_id '') and hour; counted by every
                // instance (ActivityBudgetStore). Old hours are deleted as they are passed.
                """
                CREATE TABLE activity_budgets (
                    topic TEXT NOT NULL,
                    activity_id TEXT NOT NULL,
                    hour BIGINT NOT NULL,
                    spent BIGINT NOT NULL,
                    downgraded BIGINT NOT NULL,
                    last_fit BIGINT NOT NULL,
                    PRIMARY KEY (topic, activity_id, hour)
                )
                """
            ]),
        Migration(
            version: 22, name: "API keys scoped to apps and an environment, with expiry and last use; sends know their app",
            statements: [
                // Empty: every app, which is what every key made before this meant.
                "ALTER TABLE api_keys ADD COLUMN apps TEXT NOT NULL DEFAULT ''",
                "ALTER TABLE api_keys ADD COLUMN environment TEXT",
                "ALTER TABLE api_keys ADD COLUMN expires_at BIGINT",
                "ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT",
                // NULL for sends made before: only keys without apps see them.
                "ALTER TABLE sends ADD COLUMN topic TEXT",
                // A scoped key lists its apps' sends newest first.
                "CREATE INDEX sends_topic_recent ON sends (topic, created_at, id)",
            ]),
        Migration(
            version: 23, name: "the audit log: who changed what, when and from where",
            statements: [
                """
                CREATE TABLE audit_log (
                    id TEXT NOT NULL PRIMARY KEY,
                    at BIGINT NOT NULL,
                    actor_kind TEXT NOT NULL,
                    key_id TEXT,
                    actor_name TEXT NOT NULL,
                    address TEXT,
                    action TEXT NOT NULL,
                    app TEXT,
                    subject TEXT,
                    detail TEXT NOT NULL
                )
                """,
                // Pages newest first, over everything or one app, key or kind; retention deletes the oldest first.
                "CREATE INDEX audit_log_at ON audit_log (at, id)",
                "CREATE INDEX audit_log_app ON audit_log (app, at, id)",
                "CREATE INDEX audit_log_key ON audit_log (key_id, at, id)",
                "CREATE INDEX audit_log_action ON audit_log (action, at, id)",
            ]),
        Migration(
            version: 24, name: "frequency caps: notifications per person, app, cap and window, counted by every instance",
            statements: [
                // One row per subject (PreferenceSubject's key) and window of a cap (scope: a category or '*');
                // last_send lets the send that counted it claim it again for free. Retention deletes ended windows.
                """
                CREATE TABLE frequency_counts (
                    topic TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    period_seconds BIGINT NOT NULL,
                    window_start BIGINT NOT NULL,
                    subject TEXT NOT NULL,
                    count BIGINT NOT NULL,
                    last_send TEXT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    PRIMARY KEY (topic, scope, period_seconds, window_start, subject)
                )
                """,
                "CREATE INDEX frequency_counts_expiry ON frequency_counts (expires_at)",
                // The devices a send left out because their person had reached a cap.
                "ALTER TABLE sends ADD COLUMN suppressed_frequency_cap BIGINT NOT NULL DEFAULT 0",
            ]),
        Migration(
            version: 25, name: "quiet hours: the devices a send dropped or deferred in their quiet hours",
            statements: [
                "ALTER TABLE sends ADD COLUMN suppressed_quiet_dropped BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE sends ADD COLUMN suppressed_quiet_deferred BIGINT NOT NULL DEFAULT 0",
            ]),
        Migration(
            version: 26, name: "a person's own quiet hours, chosen with their preferences",
            statements: [
                // Keyed like preference_choices: DeviceQuery reads a device's window by the same subject key, in the
                // statement that pages or groups the devices. quiet_hours is 'HH:MM-HH:MM' or 'off'.
                """
                CREATE TABLE preference_quiet_hours (
                    topic TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    quiet_hours TEXT NOT NULL,
                    updated_at BIGINT NOT NULL,
                    PRIMARY KEY (topic, subject)
                )
                """,
            ]),
        Migration(
            version: 27,
            name: "compact outcomes: the send as an integer reference, the token as bytes, no derived apns-id",
            statements: [],
            postgresStatements: compactOutcomes(
                sendReference: [
                    // Numbers the sends there are, then each new one, never reusing a number.
                    "ALTER TABLE sends ADD COLUMN ref BIGINT GENERATED BY DEFAULT AS IDENTITY"
                ],
                tokenType: "BYTEA", tokenBytes: "decode(o.token, 'hex')", suffix: ""),
            sqliteStatements: compactOutcomes(
                sendReference: [
                    // Not the rowid, which VACUUM may renumber: a column of its own, numbered as sends are created
                    // (the trigger), after the sends there are.
                    "ALTER TABLE sends ADD COLUMN ref BIGINT",
                    "UPDATE sends SET ref = rowid",
                    """
                    CREATE TRIGGER sends_ref AFTER INSERT ON sends FOR EACH ROW WHEN NEW.ref IS NULL BEGIN \
                    UPDATE sends SET ref = (SELECT coalesce(max(ref), 0) + 1 FROM sends) WHERE rowid = NEW.rowid; END
                    """,
                ],
                tokenType: "BLOB", tokenBytes: "herald_unhex(o.token)", suffix: " WITHOUT ROWID")),
        Migration(
            version: 28,
            name: "a shard holds the counts it recorded until its run ends, so that shards of one send record side by side",
            statements: ["accepted", "rejected", "failed"].map {
                "ALTER TABLE send_shards ADD COLUMN \($0) BIGINT NOT NULL DEFAULT 0"
            }),
        Migration(
            version: 29,
            name: "the devices a send moved to the other environment, which its walk of that environment skips",
            statements: [
                // A row per correction, written with the device's new environment in one transaction: the page that
                // finds the device in its new environment can find the row too (FanOut). Few rows: a send's wrong
                // environments; they go with the send.
                """
                CREATE TABLE send_corrections (
                    send_id TEXT NOT NULL REFERENCES sends (id) ON DELETE CASCADE,
                    token TEXT NOT NULL,
                    PRIMARY KEY (send_id, token)
                )
                """
            ]),
        Migration(
            version: 30,
            name: "send records: a send's first-try acceptances a row per batch, its other outcomes a row each",
            statements: [],
            postgresStatements: sendAcceptances(tokenType: "BYTEA") + [
                // Token bytes do not compress: stored out of line as they are, not tried by pglz first.
                "ALTER TABLE send_acceptances ALTER COLUMN tokens SET STORAGE EXTERNAL",
                "ALTER TABLE send_acceptances ALTER COLUMN unique_ids SET STORAGE EXTERNAL",
            ],
            sqliteStatements: sendAcceptances(tokenType: "BLOB")),
        Migration(
            version: 31,
            name: "PostgreSQL: send records in partitions by period, which retention drops whole",
            statements: [], postgresStatements: sendRecordPartitions),
        Migration(
            version: 32,
            name: "push-to-start tokens that start nothing: checked per activity, counted, and stale after misses in a row",
            statements: [
                // Misses in a row of a push-to-start token, and since when it is stale (left out of sends). Registration
                // does not write them: the same token registered again keeps them, a new token starts afresh.
                "ALTER TABLE devices ADD COLUMN start_misses BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE devices ADD COLUMN stale_at BIGINT",
                "ALTER TABLE activities ADD COLUMN start_send_id TEXT",
                "ALTER TABLE activities ADD COLUMN start_checked_at BIGINT",
                "ALTER TABLE activities ADD COLUMN started BIGINT NOT NULL DEFAULT 0",
                "ALTER TABLE activities ADD COLUMN not_started BIGINT NOT NULL DEFAULT 0",
                // The activities whose start is still to check, oldest first; and an activity by its start send (the
                // trace). Activities started before this migration have no start send and are never checked.
                """
                CREATE INDEX activities_start_unchecked ON activities (created_at) \
                WHERE start_send_id IS NOT NULL AND start_checked_at IS NULL
                """,
                "CREATE INDEX activities_start_send ON activities (start_send_id) WHERE start_send_id IS NOT NULL",
                // The installations whose app registered an update token of an activity not yet checked: what a start
                // is told by. Deleted by the check.
                """
                CREATE TABLE activity_starts (
                    topic TEXT NOT NULL,
                    activity_id TEXT NOT NULL,
                    installation_id TEXT NOT NULL,
                    started_at BIGINT NOT NULL,
                    PRIMARY KEY (topic, activity_id, installation_id)
                )
                """,
                // The devices a start send reached and started nothing on: the trace's `notStarted`. Few rows, with the
                // send.
                """
                CREATE TABLE push_to_start_misses (
                    send_id TEXT NOT NULL REFERENCES sends (id) ON DELETE CASCADE,
                    token TEXT NOT NULL,
                    PRIMARY KEY (send_id, token)
                )
                """,
            ]),
        Migration(
            version: 33,
            name: "registrations carry whether the device allows Live Activities and their frequent updates; sends count the devices that do not",
            statements: [
                // 'yes', 'no', or NULL (not reported): text, as every registration parameter of herald_register is.
                "ALTER TABLE devices ADD COLUMN activities_enabled TEXT",
                "ALTER TABLE devices ADD COLUMN frequent_pushes_enabled TEXT",
                "ALTER TABLE sends ADD COLUMN suppressed_activities_disabled BIGINT NOT NULL DEFAULT 0",
            ],
            postgresStatements: replacingRegisterFunctions(upTo: 33)),
        Migration(
            version: 34,
            name: "channels kept tidy: when each was last used, and the activities that follow one",
            statements: [
                // Set by each broadcast APNs accepts; NULL: never used since it was created.
                "ALTER TABLE channels ADD COLUMN last_used_at BIGINT",
                // The channel an activity started with inputPushChannel follows.
                "ALTER TABLE activities ADD COLUMN channel_id TEXT",
                "CREATE INDEX activities_channel ON activities (channel_id, status) WHERE channel_id IS NOT NULL",
            ]),
        Migration(
            version: 35,
            name: "Web Push subscriptions in the registry: a webpush token's endpoint and keys",
            statements: [
                // Set for a webpush token only (its token is the endpoint's SHA-256), NULL for every APNs token.
                "ALTER TABLE devices ADD COLUMN push_endpoint TEXT",
                "ALTER TABLE devices ADD COLUMN push_p256dh TEXT",
                "ALTER TABLE devices ADD COLUMN push_auth TEXT",
            ],
            postgresStatements: replacingRegisterFunctions(upTo: 35)),
    ]

    /// Migration 31, PostgreSQL only: `send_outcomes` and `send_acceptances` become tables partitioned by ranges of
    /// `send_ref`, one range per period of sends (``SendRecordPeriods``, docs/storage.md "Retention by the piece").
    /// The tables as they were become partition 0, every send made so far; partition 1 takes the sends from the next
    /// `ref` on. Attaching checks the rows of partition 0 against its range once (a scan, holding the tables). Periods
    /// start at the first retention run, on the store's clock.
    private static let sendRecordPartitions: [String] = {
        let span = SendRecordPeriods.span
        return [
            """
            CREATE TABLE send_record_periods (
                period BIGINT PRIMARY KEY,
                first_ref BIGINT,
                end_ref BIGINT NOT NULL,
                opened_at BIGINT,
                closed_at BIGINT,
                length BIGINT
            )
            """,
            "ALTER TABLE send_outcomes RENAME TO send_outcomes_p0",
            "ALTER INDEX send_outcomes_token RENAME TO send_outcomes_p0_token",
            "ALTER INDEX send_outcomes_rejected_at RENAME TO send_outcomes_p0_rejected_at",
            "ALTER INDEX send_outcomes_send_token RENAME TO send_outcomes_p0_send_token",
            """
            CREATE TABLE send_outcomes (\(compactOutcomeColumns(tokenType: "BYTEA"))) PARTITION BY RANGE (send_ref)
            """,
            "ALTER TABLE send_acceptances RENAME TO send_acceptances_p0",
            "ALTER TABLE send_acceptances_p0 RENAME CONSTRAINT send_acceptances_pkey TO send_acceptances_p0_pkey",
            "ALTER INDEX send_acceptances_range RENAME TO send_acceptances_p0_range",
            """
            CREATE TABLE send_acceptances (\(acceptanceColumns(tokenType: "BYTEA"))) PARTITION BY RANGE (send_ref)
            """,
            "ALTER TABLE send_acceptances ALTER COLUMN tokens SET STORAGE EXTERNAL",
            "ALTER TABLE send_acceptances ALTER COLUMN unique_ids SET STORAGE EXTERNAL",
            // The next ref a send gets ends partition 0 and begins partition 1.
            """
            DO $$
            DECLARE
                bound BIGINT;
            BEGIN
                EXECUTE format('SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END FROM %s',
                    pg_get_serial_sequence('sends', 'ref')) INTO bound;
                EXECUTE format('ALTER TABLE send_outcomes ATTACH PARTITION send_outcomes_p0 FOR VALUES FROM (MINVALUE) TO (%s)', bound);
                EXECUTE format('ALTER TABLE send_acceptances ATTACH PARTITION send_acceptances_p0 FOR VALUES FROM (MINVALUE) TO (%s)', bound);
                EXECUTE format('CREATE TABLE send_outcomes_p1 PARTITION OF send_outcomes FOR VALUES FROM (%s) TO (%s)', bound, bound + \(span));
                EXECUTE format('CREATE TABLE send_acceptances_p1 PARTITION OF send_acceptances FOR VALUES FROM (%s) TO (%s)', bound, bound + \(span));
                INSERT INTO send_record_periods (period, first_ref, end_ref) VALUES (0, NULL, bound), (1, bound, bound + \(span));
            END
            $$
            """,
            // On the partitioned tables, each takes partition 0's index of the same definition instead of building one.
            "CREATE INDEX send_outcomes_token ON send_outcomes (substr(token, length(token) - 7), send_ref)",
            "CREATE INDEX send_outcomes_rejected_at ON send_outcomes (at) WHERE outcome = 'rejected'",
            "CREATE INDEX send_outcomes_send_token ON send_outcomes (send_ref, token)",
            "CREATE INDEX send_acceptances_range ON send_acceptances (send_ref, environment, last_token, first_token)",
        ]
    }()

    /// Migration 30: `send_acceptances` (``AcceptedBatch``, docs/storage.md "Send records"). A row names the devices
    /// of a batch by their tokens' bytes one after the other (and the sandbox's unique ids, 16 bytes each, when it keeps
    /// them), and keeps the first and last token: the index
    /// `(send_ref, environment, last_token, first_token)` finds the batch a device is in. `send_outcomes` gets an index by send and token, for
    /// the recording's read of a range of tokens (``OutcomeRecording``): its rows are the exceptions now, few.
    private static func sendAcceptances(tokenType: String) -> [String] {
        [
            """
            CREATE TABLE send_acceptances (\(acceptanceColumns(tokenType: tokenType)))
            """,
            // By environment: a send walks one after the other, and their tokens interleave (OutcomeRecording).
            "CREATE INDEX send_acceptances_range ON send_acceptances (send_ref, environment, last_token, first_token)",
            "CREATE INDEX send_outcomes_send_token ON send_outcomes (send_ref, token)",
        ]
    }

    /// The columns of `send_acceptances` (migration 30; partitioned in 31).
    private static func acceptanceColumns(tokenType: String) -> String {
        """

            send_ref BIGINT NOT NULL REFERENCES sends (ref) ON DELETE CASCADE,
            seq BIGINT NOT NULL,
            count BIGINT NOT NULL,
            at BIGINT NOT NULL,
            token_length BIGINT NOT NULL,
            first_token \(tokenType) NOT NULL,
            last_token \(tokenType) NOT NULL,
            environment TEXT NOT NULL,
            tokens \(tokenType) NOT NULL,
            unique_ids \(tokenType),
            PRIMARY KEY (send_ref, seq)

        """
    }

    /// The columns of the compact `send_outcomes` (migration 27; partitioned in 31).
    private static func compactOutcomeColumns(tokenType: String) -> String {
        """

            send_ref BIGINT NOT NULL REFERENCES sends (ref) ON DELETE CASCADE,
            seq BIGINT NOT NULL,
            at BIGINT NOT NULL,
            status BIGINT,
            apns_timestamp BIGINT,
            token \(tokenType) NOT NULL,
            environment TEXT NOT NULL,
            outcome TEXT NOT NULL,
            apns_id TEXT,
            reason TEXT,
            message TEXT,
            action TEXT,
            apns_unique_id TEXT,
            PRIMARY KEY (send_ref, seq)

        """
    }

    /// Migration 27: `send_outcomes` rebuilt compact (docs/storage.md, "Outcomes, compactly"). The send is its `ref`
    /// (a few bytes instead of a 36-character id), the token its bytes (32 instead of 64 hex digits), and indexed by its
    /// last 8 bytes only; `apns_id` is `NULL` when it is the one the send derives (``APNSID/derived(send:token:)``),
    /// which readers fill in. SQLite keeps the rows in the primary key's tree (`WITHOUT ROWID`): no rowid, no separate
    /// key index. The 8-byte columns go first, so that PostgreSQL pads none of them. The rows already there move over
    /// as they are (their apns-ids stay stored).
    private static func compactOutcomes(sendReference: [String], tokenType: String, tokenBytes: String, suffix: String)
        -> [String]
    {
        sendReference + [
            "CREATE UNIQUE INDEX sends_ref ON sends (ref)",
            """
            CREATE TABLE send_outcomes_compact (\(compactOutcomeColumns(tokenType: tokenType)))\(suffix)
            """,
            """
            INSERT INTO send_outcomes_compact (send_ref, seq, token, environment, outcome, apns_id, status, reason, \
            apns_timestamp, message, at, action, apns_unique_id) SELECT s.ref, o.seq, \(tokenBytes), o.environment, \
            o.outcome, o.apns_id, o.status, o.reason, o.apns_timestamp, o.message, o.at, o.action, o.apns_unique_id \
            FROM send_outcomes o JOIN sends s ON s.id = o.send_id
            """,
            "DROP TABLE send_outcomes",
            "ALTER TABLE send_outcomes_compact RENAME TO send_outcomes",
            // A device's outcomes by the last 8 bytes of its token, and of a send: the delivery trace, a device's
            // deliveries, receipts, and the check that keeps one outcome per send and device (StoreSQL's inserts, under
            // the send's lock). 8 bytes, not the whole token: the index is a fifth of `(send_id, token)`'s size.
            "CREATE INDEX send_outcomes_token ON send_outcomes (substr(token, length(token) - 7), send_ref)",
            "CREATE INDEX send_outcomes_rejected_at ON send_outcomes (at) WHERE outcome = 'rejected'",
        ]
    }

    /// PostgreSQL's `herald_register` and `herald_register_batch` dropped and made again over the registration columns
    /// of `version`, for a migration that adds some: the functions take one parameter per column.
    private static func replacingRegisterFunctions(upTo version: Int) -> [String] {
        let previous = registrationColumns(upTo: version - 1).count
        return [
            "DROP FUNCTION herald_register_batch(\(Array(repeating: "TEXT[]", count: previous).joined(separator: ", ")), BIGINT[], BIGINT[])",
            "DROP FUNCTION herald_register(\(Array(repeating: "TEXT", count: previous).joined(separator: ", ")), BIGINT, BIGINT)",
            registerFunction(columns: registrationColumns(upTo: version)),
            registerBatchFunction(columns: registrationColumns(upTo: version)),
        ]
    }

    /// The columns of `devices` a registration writes, in the order of ``StoreSQL``'s binds, as of a schema version.
    package static func registrationColumns(upTo version: Int) -> [String] {
        let columns = [
            "token", "topic", "environment", "token_kind", "user_id", "installation_id", "preferred_languages",
            "app_version", "platform", "tags",
        ]
        if version < 8 { return columns }
        let liveActivities = columns + ["time_zone", "activity_type", "activity_id"]
        if version < 33 { return liveActivities }
        let allowances = liveActivities + ["activities_enabled", "frequent_pushes_enabled"]
        return version < 35 ? allowances : allowances + ["push_endpoint", "push_p256dh", "push_auth"]
    }

    /// PostgreSQL's `herald_register` over these registration columns (migration 5, and again in 8 with the columns
    /// that migration added): the locking read, the upsert, the tag rows and the move-aside in one call.
    private static func registerFunction(columns: [String]) -> String {
        let parameters = columns.map { "p_\($0)" }
        let updates = columns.dropFirst().map { "\($0) = excluded.\($0)" }
        // From migration 8, Live Activity tokens replace only those of the same activity, or attributes type.
        let sameActivity =
            columns.contains("activity_id")
            ? " AND coalesce(activity_type, '') = coalesce(p_activity_type, '') AND coalesce(activity_id, '') = coalesce(p_activity_id, '')"
            : ""
        return """
            CREATE FUNCTION herald_register(\(parameters.map { "\($0) TEXT" }.joined(separator: ", ")), \
            p_now BIGINT, p_one_per_installation BIGINT) \
            RETURNS TABLE (r_created_at BIGINT, r_existed BOOLEAN, r_invalidated_at BIGINT, r_moved TEXT) \
            LANGUAGE plpgsql AS $body$
            DECLARE
                previous_tags TEXT;
            BEGIN
                SELECT d.tags, d.invalidated_at INTO previous_tags, r_invalidated_at
                    FROM devices d WHERE d.token = p_token FOR UPDATE;
                r_existed := FOUND;
                INSERT INTO devices AS d (\(columns.joined(separator: ", ")), registered_at, created_at, updated_at)
                VALUES (\(parameters.joined(separator: ", ")), p_now, p_now, p_now)
                ON CONFLICT (token) DO UPDATE SET \(updates.joined(separator: ", ")),
                    registered_at = excluded.registered_at, updated_at = excluded.updated_at, invalidated_at = NULL,
                    invalidation_reason = NULL, apns_timestamp = NULL
                RETURNING d.created_at INTO r_created_at;
                -- A token that looked new may have been inserted meanwhile by a concurrent registration (the
                -- insert became an update), with tags of its own: clear them too.
                IF NOT r_existed OR previous_tags IS DISTINCT FROM p_tags THEN
                    DELETE FROM device_tags WHERE token = p_token;
                    INSERT INTO device_tags (tag, token) SELECT DISTINCT t, p_token FROM json_array_elements_text(p_tags::json) AS t
                        ON CONFLICT DO NOTHING;
                END IF;
                IF p_installation_id IS NOT NULL AND p_one_per_installation = 1 THEN
                    WITH gone AS (DELETE FROM devices WHERE installation_id = p_installation_id AND topic = p_topic
                        AND token_kind = p_token_kind AND token <> p_token\(sameActivity) RETURNING token)
                    SELECT string_agg(token, ',') INTO r_moved FROM gone;
                END IF;
                RETURN NEXT;
            END
            $body$
            """
    }

    /// PostgreSQL's `herald_register_batch` over these registration columns (migration 13): each parameter of
    /// `herald_register` as an array, one element per registration; calls `herald_register` for each in array order
    /// (so a later registration of a token sees, and overrides, an earlier one) and returns its row with its 1-based
    /// index. Being one call, the batch is one transaction: it commits whole or not at all.
    ///
    /// It calls `herald_register` rather than repeating its body, so the two cannot drift apart; a migration that
    /// replaces `herald_register` with more columns replaces this function too, with the same columns.
    private static func registerBatchFunction(columns: [String]) -> String {
        let parameters = columns.map { "p_\($0)" } + ["p_now", "p_one_per_installation"]
        let types = columns.map { _ in "TEXT[]" } + ["BIGINT[]", "BIGINT[]"]
        return """
            CREATE FUNCTION herald_register_batch(\(zip(parameters, types).map { "\($0) \($1)" }.joined(separator: ", "))) \
            RETURNS TABLE (r_created_at BIGINT, r_existed BOOLEAN, r_invalidated_at BIGINT, r_moved TEXT, r_index BIGINT) \
            LANGUAGE plpgsql AS $body$
            BEGIN
                FOR i IN 1 .. coalesce(array_length(p_token, 1), 0) LOOP
                    SELECT * INTO r_created_at, r_existed, r_invalidated_at, r_moved
                        FROM herald_register(\(parameters.map { "\($0)[i]" }.joined(separator: ", ")));
                    r_index := i;
                    RETURN NEXT;
                END LOOP;
            END
            $body$
            """
    }

    /// The highest version this build knows.
    package static var latestVersion: Int { migrations.map(\.version).max() ?? 0 }
}
