import HeraldStore
import Hummingbird
import Logging

/// Who asks, as a use case sees them, whichever door they came through: what they may see and act on (their API key's
/// or console session's apps, environment and scopes) and who the audit log names.
struct Caller: Sendable {
    let access: KeyAccess
    let actor: AuditActor
    /// The peer's IP address, without its port.
    let address: String?
    let logger: Logger

    init(access: KeyAccess, actor: AuditActor, address: String?, logger: Logger) {
        self.access = access
        self.actor = actor
        self.address = address
        self.logger = logger
    }

    /// The caller of a request: its console session (and the key it signed in with), else its API key.
    init(_ context: ServerRequestContext) {
        access = Self.access(of: context)
        actor = AuditTrail.actor(context)
        address = AuditTrail.address(context)
        logger = context.logger
    }

    /// What a request may see and act on: its console session's key (everything for the one-time link), else its
    /// API key's.
    static func access(of context: ServerRequestContext) -> KeyAccess {
        context.consoleSession != nil ? KeyAccess(key: context.consoleSession?.apiKey) : context.access
    }
}

extension ServerRequestContext {
    /// Who makes the request, for the use cases.
    var caller: Caller { Caller(self) }
}
