import Foundation
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging
import NIOCore

/// Writes the audit log's entries for changes made through the API and the console (docs/security.md, "Audit
/// log"): who from the request's key or console session, from where from its peer address, when from the clock.
///
/// The change is made before its entry is written, so a failed write cannot undo it: it is logged as an error
/// (with the entry's action and subject) instead of failing the request that made the change. A send is the exception:
/// its entry (``entry(_:_:app:subject:detail:)``) is written in the same write as the send's record, so the hot path
/// of the API waits for one commit, and the two are stored together or not at all.
struct AuditTrail: Sendable {
    let store: any Store
    let clock: any WallClock

    /// Records a change the request made.
    /// - Parameters:
    ///   - app: The app it concerned, if one.
    ///   - subject: What it was done to: an id, or a redacted token; never a secret.
    ///   - detail: The change in words; never a secret, a whole token or a notification's text.
    func record(
        _ action: AuditAction, _ context: ServerRequestContext, app: String? = nil, subject: String? = nil,
        detail: String = ""
    ) async {
        await record(action, by: context.caller, app: app, subject: subject, detail: detail)
    }

    /// Records a change a use case made for its caller.
    func record(
        _ action: AuditAction, by caller: Caller, app: String? = nil, subject: String? = nil, detail: String = ""
    ) async {
        let entry = AuditEntry(
            at: clock.now(), actor: caller.actor, address: caller.address, action: action, app: app, subject: subject,
            detail: detail)
        await record(entry, logger: caller.logger)
    }

    /// The entry for a change the request makes, for a store call that writes it with the change itself (a send).
    func entry(
        _ action: AuditAction, _ context: ServerRequestContext, app: String? = nil, subject: String? = nil,
        detail: String = ""
    ) -> AuditEntry {
        AuditEntry(
            at: clock.now(), actor: Self.actor(context), address: Self.address(context), action: action, app: app,
            subject: subject, detail: detail)
    }

    /// Records an entry made elsewhere (a console sign-in, whose session the request does not carry yet).
    func record(_ entry: AuditEntry, logger: Logger) async {
        do {
            try await store.recordAudit(entry)
        } catch {
            logger.error(
                "The audit log did not record a change",
                metadata: [LogKey.reason: "\(entry.action) \(entry.subject ?? "")", LogKey.error: "\(error)"])
        }
    }

    /// Who made the request: its console session (and the key it signed in with), else its API key.
    static func actor(_ context: ServerRequestContext) -> AuditActor {
        if let session = context.consoleSession {
            return AuditActor(kind: .console, keyID: session.apiKey?.id, name: session.apiKey?.name ?? "one-time link")
        }
        if let key = context.apiKey { return AuditActor(kind: .apiKey, keyID: key.id, name: key.name) }
        return AuditActor(kind: .apiKey, keyID: nil, name: "anonymous")
    }

    /// The peer's IP address, without its port.
    static func address(_ context: ServerRequestContext) -> String? { context.remoteAddress?.ipAddress }
}
