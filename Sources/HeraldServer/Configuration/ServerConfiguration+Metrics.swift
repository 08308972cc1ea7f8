import Foundation

extension ServerConfiguration {
    /// Where `GET /metrics` is served, and whether it asks for a bearer key (docs/security.md, "Metrics").
    ///
    /// Metrics name every app, lane and failure reason: they are for the operator's Prometheus, not for whoever can
    /// reach the registration API. With ``listen`` set they are served on that listener only (a private interface,
    /// a port not published); without it they are served on the API's listener only when that listens on loopback
    /// or ``bearerKey`` is set, and otherwise not at all (the start says so).
    public struct Metrics: Sendable, Hashable {
        /// The shortest bearer key accepted: a guessable key would make the metrics public again.
        public static let minimumKeyCharacters = 32

        /// A listener of its own for `/metrics` (and `/health`); `nil`: the API's listener, when allowed.
        public var listen: ListenAddress?
        /// A secret `/metrics` asks for as `Authorization: Bearer <key>`, wherever it is served; `nil`: none.
        public var bearerKey: String?

        /// - Parameters: see the properties.
        public init(listen: ListenAddress? = nil, bearerKey: String? = nil) {
            self.listen = listen
            self.bearerKey = bearerKey
        }

        /// Where the metrics go for an API listening at `api`.
        public enum Placement: Sendable, Hashable {
            /// On the API's listener.
            case api
            /// On a listener of their own.
            case own(ListenAddress)
            /// Nowhere: the API listens beyond loopback and no key protects them.
            case off
        }

        /// Where the metrics go when the API listens at `api`.
        public func placement(api: ListenAddress) -> Placement {
            if let listen { return .own(listen) }
            return api.isLoopback || bearerKey != nil ? .api : .off
        }
    }
}

extension ServerConfiguration.ListenAddress {
    /// Whether only this machine can connect: `127.0.0.0/8`, `::1` or `localhost`.
    public var isLoopback: Bool {
        let bare = host.trimmingCharacters(in: ["[", "]"])
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }
}

extension ServerConfiguration {
    /// Reads `HERALD_METRICS_LISTEN` and `HERALD_METRICS_KEY`.
    mutating func readMetrics(reader: SettingReader) throws(ConfigurationError) {
        if let text = try reader.string("HERALD_METRICS_LISTEN", "metricsListen") {
            guard let address = ListenAddress(text) else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_METRICS_LISTEN", "metricsListen")) is \"\(text)\": write host:port, such as 10.0.0.5:9464 or 127.0.0.1:9464."
                )
            }
            metrics.listen = address
        }
        if let key = try reader.string("HERALD_METRICS_KEY", "metricsKey") {
            guard key.count >= Metrics.minimumKeyCharacters else {
                throw ConfigurationError(
                    "\(reader.name("HERALD_METRICS_KEY", "metricsKey")) has \(key.count) characters: use at least \(Metrics.minimumKeyCharacters) random ones (openssl rand -base64 32)."
                )
            }
            metrics.bearerKey = key
        }
    }
}
