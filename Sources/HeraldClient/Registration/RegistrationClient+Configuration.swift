public import Foundation

extension RegistrationClient {
    /// Where the Herald server is and how to talk to it.
    ///
    /// Checked once, when made: a plain `http://` URL is refused unless ``allowsInsecureHTTP`` is set, which is meant
    /// for a development server on the local network (the book's `http://192.168.1.1:8080`). Device tokens and user
    /// ids travel in these requests, so production servers must use HTTPS.
    public struct Configuration: Sendable {
        /// The server's base URL, such as `https://push.example.com`; the client adds `api/token`.
        public let serverURL: URL
        /// Sent as `X-Herald-Registration-Key` when the server requires one.
        public let registrationKey: String?
        /// Whether plain HTTP is allowed. Only for a local development server.
        public let allowsInsecureHTTP: Bool
        /// How failed requests are retried.
        public let retry: RetryPolicy
        /// How long one request may take before it counts as a network failure.
        public let requestTimeout: Duration

        /// - Parameters:
        ///   - serverURL: the server's base URL; a path prefix such as `https://example.com/herald` is kept.
        ///   - registrationKey: the key the server gave this app, if it requires one.
        ///   - allowsInsecureHTTP: allow `http://` for a development server. On Apple platforms the app also needs an
        ///     App Transport Security exception for that host.
        ///   - retry: the retry policy; ``RetryPolicy/default`` makes four attempts.
        ///   - requestTimeout: the limit for each request.
        /// - Throws: ``RegistrationError`` (`invalidServerURL`) when the URL is not absolute http(s) with a host, or
        ///   (`insecureURL`) when it is `http://` and `allowsInsecureHTTP` is false.
        public init(
            serverURL: URL, registrationKey: String? = nil, allowsInsecureHTTP: Bool = false,
            retry: RetryPolicy = .default, requestTimeout: Duration = .seconds(30)
        ) throws(RegistrationError) {
            let scheme = serverURL.scheme?.lowercased()
            guard scheme == "https" || scheme == "http", let host = serverURL.host, !host.isEmpty else {
                throw RegistrationError(
                    .invalidServerURL,
                    "The server URL \"\(serverURL.absoluteString)\" is not an absolute http(s) URL: use the server's base URL, such as https://push.example.com."
                )
            }
            if scheme == "http" && !allowsInsecureHTTP {
                throw RegistrationError(
                    .insecureURL,
                    "The server URL \(serverURL.absoluteString) uses plain HTTP, which would send device tokens unencrypted: use https, or set allowsInsecureHTTP to true for a development server on your own network (and add an App Transport Security exception for it)."
                )
            }
            self.serverURL = serverURL
            self.registrationKey = registrationKey
            self.allowsInsecureHTTP = allowsInsecureHTTP
            self.retry = retry
            self.requestTimeout = requestTimeout
        }

        /// `POST` here to register.
        var registrationURL: URL { serverURL.appendingPathComponent("api").appendingPathComponent("token") }

        /// `DELETE` here to unregister a token.
        func unregistrationURL(for hex: String) -> URL { registrationURL.appendingPathComponent(hex) }

        /// `GET` and `PUT` a token's person's notification preferences here.
        func preferencesURL(for hex: String) -> URL {
            serverURL.appendingPathComponent("api").appendingPathComponent("preferences").appendingPathComponent(hex)
        }

        /// `POST` delivery receipts here.
        var eventsURL: URL { serverURL.appendingPathComponent("api").appendingPathComponent("events") }
    }
}
