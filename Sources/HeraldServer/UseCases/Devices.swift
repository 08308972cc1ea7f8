import HTTPTypes
import HeraldCore
import HeraldSending
import HeraldStore
import Logging

/// Devices as an administrator registers and removes them — the console's *Devices* page and `herald tokens` — with
/// the one access check and audit entry of each (docs/security.md). An app's own registrations (`POST /api/token`,
/// `DELETE /api/token/{token}`) stay on their controller: their caller is an app with a registration key, not a key
/// or a session, and their rate limit and hot path are theirs.
struct Devices: Sendable {
    let store: any Store
    let apps: AppDirectory
    let audit: AuditTrail

    var resources: VisibleResources { VisibleResources(store: store, apps: apps) }

    /// Registers a token for an app the caller may act on, as `POST /api/token` would store it.
    /// - Throws: ``APIError`` `400 unknownTopic`/`missingTopic`, `403 appNotAllowed` or `environmentNotAllowed`, and
    ///   `400 invalidField` when a field breaks a limit (nothing is stored).
    func register(_ registration: TokenRegistration, by caller: Caller) async throws -> UpsertResult {
        let directoryApp = try apps.app(named: registration.topic, for: caller.access)
        let app = directoryApp.bundleID
        try caller.access.check(environment: registration.environment)
        try directoryApp.checkTakes(registration.tokenKind)
        var registration = registration
        registration.topic = app
        let result: UpsertResult
        do {
            result = try await store.upsert(registration)
        } catch let error as StoreError where error.code == .invalidRecord {
            throw APIError(.badRequest, reason: "invalidField", error.message)
        }
        try await PushToStartChecks.noteRegistration(result.registration.registration, in: store)
        await audit.record(
            .deviceRegistered, by: caller, app: app, subject: registration.token.redacted,
            detail: "\(registration.environment.name), \(registration.tokenKind.name)")
        caller.logger.notice("Registered a device", metadata: [LogKey.tokenSuffix: "\(registration.token.redacted)"])
        return result
    }

    /// Removes a device the caller sees (its app and environment): it gets no more notifications.
    /// - Returns: The device as it was.
    /// - Throws: ``APIError`` `404 unknownToken`, for a token that is not registered or that the caller does not see.
    @discardableResult
    func remove(_ token: DeviceToken, by caller: Caller) async throws -> DeviceRegistration {
        let removed = try await resources.device(token, for: caller.access)
        guard try await store.remove(token) else { throw VisibleResources.unknownToken }
        caller.logger.notice("Removed a device", metadata: [LogKey.tokenSuffix: "\(token.redacted)"])
        await audit.record(.deviceRemoved, by: caller, app: removed.topic, subject: token.redacted)
        return removed
    }
}
