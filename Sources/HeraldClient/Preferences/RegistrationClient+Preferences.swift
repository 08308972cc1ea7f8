public import HeraldCore

#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
#else
import Foundation
#endif

/// The person's notification preferences (docs/preferences.md): read and changed through
/// `GET`/`PUT /api/preferences/{token}`, with the token this installation registered.
///
/// A change that cannot reach the server (network errors, `429`, `5xx` after the retry policy) is kept and sent by
/// ``sendPendingPreferences()``; later changes to the same categories replace it. The last known preferences, with
/// the changes not yet sent applied, are kept for a settings screen that opens offline (``cachedPreferences()``).
extension RegistrationClient {
    /// Where the pending change and the last known preferences are kept.
    static let pendingPreferencesKey = "herald.pending-preferences"
    static let preferencesKey = "herald.preferences"

    /// The person's preferences as the server has them now; the cache is refreshed.
    /// - Parameter token: The token to speak for; the last one this installation registered by default.
    /// - Throws: ``RegistrationError``: `rejected` (`unknownToken` when the token is not registered), `gaveUp`,
    ///   `cancelled`; `invalidRegistration` when no token was ever registered.
    public func preferences(for token: DeviceToken? = nil) async throws(RegistrationError) -> NotificationPreferences {
        let token = try preferencesToken(token)
        let request = makeRequest(url: configuration.preferencesURL(for: token.hex), method: "GET")
        let reply = try await send(request, what: "preferences request for token \(token.redacted)", acceptsNotFound: false)
        let preferences = try Self.preferences(from: reply)
        try? storage.set(Data(preferences.json.jsonBytes), forKey: Self.preferencesKey)
        return preferences
    }

    /// Turns categories on (`true`), off (`false`) or back to the app's default (`nil`); others keep their choice.
    /// `quietHours` sets the person's own quiet hours (their window, none, or back to the app's); `nil` keeps them.
    ///
    /// When the server cannot be reached, the change is saved, applied to ``cachedPreferences()``, and the error says
    /// so (``RegistrationError/isPendingSaved``); ``sendPendingPreferences()`` sends it later.
    /// - Returns: The preferences after the change, as the server answered.
    /// - Throws: ``RegistrationError``: `rejected` for a category the app does not declare or a mandatory one turned
    ///   off or a malformed window (nothing is saved: sending it again would get the same answer), `gaveUp` or
    ///   `cancelled` with the change
    ///   saved, `storageFailed` when it could not be saved.
    @discardableResult
    public func updatePreferences(
        _ changes: [String: Bool?], quietHours: NotificationPreferences.QuietHoursChoice? = nil,
        for token: DeviceToken? = nil
    ) async throws(RegistrationError) -> NotificationPreferences {
        let token = try preferencesToken(token)
        let change = PendingPreferences(token: token, changes: changes, quietHours: quietHours)
        do throws(RegistrationError) {
            let preferences = try await put(change)
            // Changes made while this one was in flight stay pending; those it carried are done.
            try? storage.update(Self.pendingPreferencesKey) { data in
                guard let pending = data.flatMap(PendingPreferences.init(data:)) else { return }
                data = pending.removing(change).map { Data($0.jsonBytes) }
            }
            try? storage.set(Data(preferences.json.jsonBytes), forKey: Self.preferencesKey)
            return preferences
        } catch {
            guard error.code == .gaveUp || error.code == .cancelled else { throw error }
            do {
                try storage.update(Self.pendingPreferencesKey) { data in
                    let merged = data.flatMap(PendingPreferences.init(data:))?.merging(change) ?? change
                    data = Data(merged.jsonBytes)
                }
            } catch let storageError {
                throw RegistrationError(
                    .storageFailed, "\(error.message) It could not be saved to try again later: \(storageError.message)",
                    status: error.status, attempts: error.attempts, underlying: storageError)
            }
            throw error.savedForLater(by: "sendPendingPreferences()")
        }
    }

    /// Sends the saved change, if any: call it when the app becomes active or the network returns.
    /// - Returns: The preferences after it, or `nil` when nothing was pending.
    /// - Throws: ``RegistrationError`` as ``updatePreferences(_:quietHours:for:)``; a refused change is dropped.
    @discardableResult
    public func sendPendingPreferences() async throws(RegistrationError) -> NotificationPreferences? {
        let pending: PendingPreferences?
        do {
            pending = try storage.data(forKey: Self.pendingPreferencesKey).flatMap(PendingPreferences.init(data:))
        } catch {
            throw RegistrationError(
                .storageFailed, "Could not read the pending preferences: \(error.message)", underlying: error)
        }
        guard let pending else { return nil }
        do throws(RegistrationError) {
            return try await updatePreferences(pending.changes, quietHours: pending.quietHours, for: pending.token)
        } catch {
            if error.code == .rejected { try? storage.set(nil, forKey: Self.pendingPreferencesKey) }
            throw error
        }
    }

    /// The last preferences the server answered, with the changes not yet sent applied; `nil` before the first answer.
    public func cachedPreferences() -> NotificationPreferences? {
        guard let data = try? storage.data(forKey: Self.preferencesKey),
            let json = try? JSONValue(parsing: data), let known = NotificationPreferences(json: json)
        else { return nil }
        let pending = (try? storage.data(forKey: Self.pendingPreferencesKey)).flatMap { $0 }
            .flatMap(PendingPreferences.init(data:))
        return pending.map { known.applying($0.changes).applying(quietHours: $0.quietHours) } ?? known
    }

    private func put(_ change: PendingPreferences) async throws(RegistrationError) -> NotificationPreferences {
        var request = makeRequest(url: configuration.preferencesURL(for: change.token.hex), method: "PUT")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let categories = change.changes.mapValues { $0.map(JSONValue.bool) ?? .null }
        var body: [String: JSONValue] = ["categories": .object(categories)]
        if let quietHours = change.quietHours { body["quietHours"] = quietHours.json }
        request.httpBody = Data(JSONValue.object(body).jsonBytes)
        let reply = try await send(
            request, what: "preferences change for token \(change.token.redacted)", acceptsNotFound: false)
        return try Self.preferences(from: reply)
    }

    private func preferencesToken(_ token: DeviceToken?) throws(RegistrationError) -> DeviceToken {
        if let token { return token }
        guard let registered = try registeredToken() else {
            throw RegistrationError.invalidRegistration(
                field: "token", "no device token was registered yet: register before reading or changing preferences")
        }
        return registered
    }

    private static func preferences(from reply: Reply) throws(RegistrationError) -> NotificationPreferences {
        guard let json = try? JSONValue(parsing: reply.body), let preferences = NotificationPreferences(json: json) else {
            throw RegistrationError(
                .rejected, "The server's answer is not a preferences object: check the server URL and its version.",
                status: reply.status, attempts: reply.attempts)
        }
        return preferences
    }
}

/// A preferences change waiting to be sent: one token, the latest choice per category and of quiet hours.
struct PendingPreferences: Sendable, Hashable {
    var token: DeviceToken
    var changes: [String: Bool?]
    /// `nil`: quiet hours are not changed.
    var quietHours: NotificationPreferences.QuietHoursChoice?

    init(token: DeviceToken, changes: [String: Bool?], quietHours: NotificationPreferences.QuietHoursChoice? = nil) {
        self.token = token
        self.changes = changes
        self.quietHours = quietHours
    }

    init?(data: Data) {
        guard let json = try? JSONValue(parsing: data), let hex = json["token"]?.stringValue,
            let token = try? DeviceToken(hex: hex), case .object(let members)? = json["changes"]
        else { return nil }
        var changes: [String: Bool?] = [:]
        for (name, value) in members {
            switch value {
            case .bool(let enabled): changes[name] = .some(enabled)
            case .null: changes[name] = .some(nil)
            default: return nil
            }
        }
        var quietHours: NotificationPreferences.QuietHoursChoice?
        if let stored = json["quietHours"] {
            guard let choice = NotificationPreferences.QuietHoursChoice(json: stored) else { return nil }
            quietHours = choice
        }
        self.init(token: token, changes: changes, quietHours: quietHours)
    }

    var jsonBytes: [UInt8] {
        var members: [String: JSONValue] = [
            "token": .string(token.hex), "changes": .object(changes.mapValues { $0.map(JSONValue.bool) ?? .null }),
        ]
        if let quietHours { members["quietHours"] = quietHours.json }
        return JSONValue.object(members).jsonBytes
    }

    /// A later change: its choices win; for another token (a new registration) it replaces this one.
    func merging(_ later: PendingPreferences) -> PendingPreferences {
        guard later.token == token else { return later }
        return PendingPreferences(
            token: token, changes: changes.merging(later.changes) { $1 }, quietHours: later.quietHours ?? quietHours)
    }

    /// What is left once `sent` reached the server: the choices it did not carry, or that changed since.
    func removing(_ sent: PendingPreferences) -> PendingPreferences? {
        guard sent.token == token else { return self }
        let left = changes.filter { name, choice in sent.changes[name].map { $0 != choice } ?? true }
        let quietLeft = quietHours == sent.quietHours ? nil : quietHours
        return left.isEmpty && quietLeft == nil
            ? nil : PendingPreferences(token: token, changes: left, quietHours: quietLeft)
    }
}
