public import HeraldStore
public import Hummingbird
public import NIOCore

/// The per-request context of Herald's routes: the client's address (for rate limits), and the API key or console
/// session that authenticated the request, if any.
public struct ServerRequestContext: RequestContext, RemoteAddressRequestContext {
    /// Hummingbird's per-request storage: logger, parameters, endpoint.
    public var coreContext: CoreRequestContextStorage
    /// The peer's address; `nil` when the request did not come over a socket (router tests).
    public let remoteAddress: SocketAddress?
    /// The API key that authenticated the request, set by the bearer check (or by a console session's cookie).
    public var apiKey: APIKey?
    /// The console session the request's cookie belongs to, if any.
    public var consoleSession: ConsoleSession?

    /// Makes the context of a request arriving on a channel.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Bodies are read with each endpoint's own limit; this bounds anything decoded generically.
    public var maxUploadSize: Int { 64 * 1024 }
}
