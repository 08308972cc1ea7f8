import Foundation
public import HeraldCore
import HeraldStore
import NIOSSL
public import PostgresNIO

extension PostgresStore {
    /// The server, the pool and the schema to use.
    public struct Configuration: Sendable {
        /// Connection settings and pool size (postgres-nio's configuration).
        public var client: PostgresClient.Configuration
        /// The schema Herald's tables live in, when not the user's default (`public`): created by ``migrate()``.
        /// Lowercase letters, digits and `_`, starting with a letter; ``PostgresStore/migrate()`` refuses other names.
        public var schema: String?
        /// Where record times come from.
        public var clock: any WallClock
        /// How long an operation waits for a pooled connection — the server is down, or every connection is busy —
        /// before it fails with ``HeraldStore/StoreError`` `.unavailable`. Default 10 seconds.
        public var acquireTimeout: Duration = .seconds(10)
        /// How long one operation may run once it has its connection before Herald closes that connection and fails
        /// it with ``HeraldStore/StoreError`` `.timedOut`: a connection whose path went silent (a NAT or load
        /// balancer that lost its state) never answers, and TCP alone would take a quarter of an hour to say so.
        /// Migrations have no limit. Default 30 seconds (URL option `query_timeout`).
        public var operationTimeout: Duration = .seconds(30)
        /// While the database is away (an operation lost its connection, or the health probe got no answer), the most
        /// an operation waits for a connection, and then for its answer: requests fail within this rather than
        /// ``acquireTimeout`` and ``operationTimeout``, and the first that succeeds ends the state. Default 1 second.
        public var awayTimeout: Duration = .seconds(1)
        /// How often the store checks that the database answers, with `SELECT 1` (a connection within
        /// ``awayTimeout``, its answer within 5 seconds): a path that went silent is noticed within about 6 seconds,
        /// without waiting for an operation's own timeout. Default 1 second; `nil` never checks.
        public var probeInterval: Duration? = .seconds(1)

        /// - Parameters:
        ///   - client: Server, credentials, TLS and pool settings.
        ///   - schema: Herald's schema, or `nil` for the default search path.
        ///   - clock: Where record times come from; default the system clock.
        public init(
            client: PostgresClient.Configuration, schema: String? = nil, clock: any WallClock = SystemWallClock()
        ) {
            self.client = client
            self.schema = schema
            self.clock = clock
        }

        /// Reads a database URL: `postgres://user:password@host:port/database` (or `postgresql://`).
        ///
        /// Query options: `sslmode=disable|prefer|require` (default `prefer`, as libpq), `schema=<name>`,
        /// `pool=<most connections>` (default 20), `connect_timeout=<seconds>` (``acquireTimeout``),
        /// `query_timeout=<seconds>` (``operationTimeout``). User and password may be percent-encoded.
        /// - Throws: ``HeraldStore/StoreError`` `.invalidURL`, saying which part is wrong. The message never
        ///   contains the password.
        public init(url: String, clock: any WallClock = SystemWallClock()) throws {
            func invalid(_ problem: String) -> StoreError {
                StoreError(
                    .invalidURL,
                    "The PostgreSQL URL \(problem): write postgres://user:password@host:5432/database.")
            }
            guard let components = URLComponents(string: url),
                let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
            else { throw invalid("is not a postgres:// URL") }
            guard let host = components.host, !host.isEmpty else { throw invalid("has no host") }
            guard let user = components.user, !user.isEmpty else { throw invalid("has no user") }
            let database = String(components.path.drop(while: { $0 == "/" }))
            var options: [String: String] = [:]
            for item in components.queryItems ?? [] { options[item.name] = item.value ?? "" }
            let tls: PostgresClient.Configuration.TLS
            switch options["sslmode"] ?? "prefer" {
            case "disable": tls = .disable
            case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
            case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
            default: throw invalid("has an unknown sslmode: use disable, prefer or require")
            }
            var client = PostgresClient.Configuration(
                host: host, port: components.port ?? 5432, username: user, password: components.password,
                database: database.isEmpty ? nil : database, tls: tls)
            if let pool = options["pool"] {
                guard let size = Int(pool), size > 0 else {
                    throw invalid("has a pool size that is not a positive number")
                }
                client.options.maximumConnections = size
            }
            if let schema = options["schema"], !Self.isValidSchema(schema) {
                throw StoreError(
                    .invalidURL,
                    "The schema name in the PostgreSQL URL is not allowed: use lowercase letters, digits and _, starting with a letter."
                )
            }
            self.init(client: client, schema: options["schema"], clock: clock)
            if let seconds = options["connect_timeout"] {
                guard let value = Int(seconds), (1...600).contains(value) else {
                    throw invalid("has a connect_timeout that is not a number of seconds from 1 to 600")
                }
                acquireTimeout = .seconds(value)
            }
            if let seconds = options["query_timeout"] {
                guard let value = Int(seconds), (1...86_400).contains(value) else {
                    throw invalid("has a query_timeout that is not a number of seconds from 1 to 86400")
                }
                operationTimeout = .seconds(value)
            }
        }

        static func isValidSchema(_ name: String) -> Bool {
            guard let first = name.first, first.isASCII, first.isLetter, first.isLowercase, name.count <= 63 else {
                return false
            }
            return name.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "_" }
        }
    }
}
