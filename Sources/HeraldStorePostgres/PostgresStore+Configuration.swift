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
        /// While the database is away (an operation lost its connection, or the pulse got no answer), the most an
        /// operation waits for a connection, and then for its answer: requests fail within this rather than
        /// ``acquireTimeout`` and ``operationTimeout``, and the first that succeeds ends the state. Default 1 second.
        public var awayTimeout: Duration = .seconds(1)
        /// How often the store checks that the database answers when nothing else happens: `SELECT 1` on a connection
        /// of its own, 1 second for its answer. The same check runs as soon as an operation has waited 0.3 s with no
        /// statement answered meanwhile, so that a database gone silent (a partition, a stopped server) fails the
        /// operations waiting on it within about 1.5 seconds, and every 0.1 s while the database is away, so that its
        /// return is used at once (``DatabasePulse``). Default 1 second; `nil` never checks.
        public var probeInterval: Duration? = .seconds(1)
        /// Whether an operation that has waited 3 seconds for its answer is looked up in `pg_stat_activity` (from a
        /// connection of its own), so that a connection whose path went silent is closed within seconds rather than at
        /// ``operationTimeout`` (``SilentConnectionWatch``). It needs each connection's backend process to stay the
        /// same: turn it off behind a pooler in transaction mode (URL option `silent_connection_watch=off`).
        /// Default on.
        public var watchesSilentConnections = true
        /// The hosts to use, in order of preference, when the URL names several (a primary and its standbys): the pool
        /// connects to the first that satisfies ``targetSessionAttributes``, and looks again, in order, when that one
        /// goes away or stops accepting writes (a failover). With one host (the usual case) the pool connects to
        /// ``client``'s. The hosts share ``client``'s user, password, database, TLS and options.
        public var hosts: [Host] = []
        /// Which of several ``hosts`` the pool uses: `.readWrite` (the default, URL option
        /// `target_session_attrs=read-write`), the first that accepts writes, as libpq decides it
        /// (`SHOW transaction_read_only` answers `off`); `.any`, the first that accepts a connection. Herald writes
        /// with almost every operation, so unlike libpq the default is `.readWrite`.
        public var targetSessionAttributes: TargetSessionAttributes = .readWrite

        /// A host of a database named by several (``hosts``).
        public struct Host: Sendable, Hashable, CustomStringConvertible {
            public var name: String
            public var port: Int

            public init(_ name: String, port: Int = 5432) {
                self.name = name
                self.port = port
            }

            public var description: String { name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)" }
        }

        /// Which host of several the pool may use (libpq's `target_session_attrs`).
        public enum TargetSessionAttributes: String, Sendable {
            /// The first host that accepts a connection.
            case any
            /// The first host that accepts a connection and writes: the primary.
            case readWrite = "read-write"
        }

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
        /// Several hosts (a primary and its standbys) are named as libpq takes them:
        /// `postgres://user:password@host1:5432,host2:5433/database`, or with the options
        /// `host=host1,host2&port=5432,5433` (one port for all, or one per host); see ``hosts`` and
        /// ``targetSessionAttributes`` (`target_session_attrs=read-write|any`).
        ///
        /// Query options: `sslmode=disable|prefer|require` (default `prefer`, as libpq), `schema=<name>`,
        /// `pool=<most connections>` (default 20), `connect_timeout=<seconds>` (``acquireTimeout``),
        /// `query_timeout=<seconds>` (``operationTimeout``), `silent_connection_watch=on|off`
        /// (``watchesSilentConnections``). User and password may be percent-encoded.
        /// - Throws: ``HeraldStore/StoreError`` `.invalidURL`, saying which part is wrong. The message never
        ///   contains the password.
        public init(url: String, clock: any WallClock = SystemWallClock()) throws {
            func invalid(_ problem: String) -> StoreError {
                StoreError(
                    .invalidURL,
                    "The PostgreSQL URL \(problem): write postgres://user:password@host:5432/database.")
            }
            let (oneHostURL, listedHosts) = try Self.splitHosts(url, invalid: invalid)
            guard let components = URLComponents(string: oneHostURL),
                let scheme = components.scheme, scheme == "postgres" || scheme == "postgresql"
            else { throw invalid("is not a postgres:// URL") }
            guard let user = components.user, !user.isEmpty else { throw invalid("has no user") }
            let database = String(components.path.drop(while: { $0 == "/" }))
            var options: [String: String] = [:]
            for item in components.queryItems ?? [] { options[item.name] = item.value ?? "" }
            var hosts = listedHosts ?? []
            if listedHosts == nil, let host = components.host, !host.isEmpty {
                hosts = [Host(host, port: components.port ?? 5432)]
            }
            if let names = options["host"] {
                hosts = try Self.hosts(names: names, ports: options["port"], invalid: invalid)
            }
            guard let host = hosts.first else { throw invalid("has no host") }
            let tls: PostgresClient.Configuration.TLS
            switch options["sslmode"] ?? "prefer" {
            case "disable": tls = .disable
            case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
            case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
            default: throw invalid("has an unknown sslmode: use disable, prefer or require")
            }
            var client = PostgresClient.Configuration(
                host: host.name, port: host.port, username: user, password: components.password,
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
            self.hosts = hosts
            switch options["silent_connection_watch"] {
            case nil, "on": break
            case "off": watchesSilentConnections = false
            default: throw invalid("has a silent_connection_watch that is neither on nor off")
            }
            if let attributes = options["target_session_attrs"] {
                guard let value = TargetSessionAttributes(rawValue: attributes) else {
                    throw invalid("has a target_session_attrs Herald does not support: use read-write or any")
                }
                targetSessionAttributes = value
            }
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

        /// The hosts of a URL that names several in its authority (`user@host1:5432,host2:5433/db`), and the URL with
        /// only the first, which `URLComponents` can read; `nil` hosts for a URL with one.
        static func splitHosts(_ url: String, invalid: (String) -> StoreError) throws -> (String, [Host]?) {
            guard let schemeEnd = url.range(of: "://") else { return (url, nil) }
            let rest = url[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex
            let authority = rest[..<authorityEnd]
            let hostsStart = authority.lastIndex(of: "@").map { authority.index(after: $0) } ?? authority.startIndex
            let hostList = authority[hostsStart...]
            guard hostList.contains(",") else { return (url, nil) }
            let hosts = try hostList.split(separator: ",", omittingEmptySubsequences: false).map { item in
                try host(String(item), invalid: invalid)
            }
            let first = String(hostList.prefix(while: { $0 != "," }))
            return (String(url[..<hostsStart]) + first + String(url[authorityEnd...]), hosts)
        }

        /// `host`, `host:port`, `[v6]` or `[v6]:port`.
        private static func host(_ item: String, invalid: (String) -> StoreError) throws -> Host {
            var name = Substring(item)
            var port: Int?
            if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
                let after = name[name.index(after: close)...]
                if after.hasPrefix(":") { port = Int(after.dropFirst()) ?? -1 } else if !after.isEmpty { port = -1 }
                name = name[name.index(after: name.startIndex)..<close]
            } else if let colon = name.lastIndex(of: ":") {
                port = Int(name[name.index(after: colon)...]) ?? -1
                name = name[..<colon]
            }
            guard !name.isEmpty else { throw invalid("has an empty host in its list of hosts") }
            guard (1...65_535).contains(port ?? 5432) else {
                throw invalid("has a host whose port is not a number from 1 to 65535 (\(item))")
            }
            return Host(String(name), port: port ?? 5432)
        }

        /// The hosts of the `host=a,b` and `port=1,2` options: one port for every host, or one per host.
        private static func hosts(names: String, ports: String?, invalid: (String) -> StoreError) throws -> [Host] {
            let names = names.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            let ports = try (ports?.split(separator: ",", omittingEmptySubsequences: false) ?? []).map { text in
                guard let port = Int(text), (1...65_535).contains(port) else {
                    throw invalid("has a port option that is not a list of numbers from 1 to 65535")
                }
                return port
            }
            guard ports.count <= 1 || ports.count == names.count else {
                throw invalid("has \(ports.count) ports for \(names.count) hosts: give one port, or one per host")
            }
            return try names.enumerated().map { index, name in
                guard !name.isEmpty else { throw invalid("has an empty host in its list of hosts") }
                return Host(name, port: ports.isEmpty ? 5432 : ports[ports.count == 1 ? 0 : index])
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
