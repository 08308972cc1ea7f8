import HTTPTypes
import HeraldCore
import HeraldStore

/// The one access check of each resource a caller names by its id — a send, a device, one notification's delivery
/// trace — whichever door the request came through (the API's key, the console's session): the API and the console
/// read these through here, so no copy of a page can forget the check (docs/security.md, "Keys scoped to apps").
///
/// A resource of an app or environment the caller does not see is as unknown as a missing one: the same `404`, the same
/// words, so that an id alone never tells a limited key that something exists elsewhere.
struct VisibleResources: Sendable {
    let store: any Store
    /// The apps' frequency caps, for a trace's evidence.
    let apps: AppDirectory

    /// The send, if the caller sees its app.
    /// - Throws: ``APIError`` `404 unknownSend`.
    func send(_ id: SendID, for caller: KeyAccess) async throws -> SendRecord {
        guard let record = try await store.send(id), caller.sees(app: record.topic) else { throw Self.unknownSend }
        return record
    }

    /// The device, active or removed, if the caller sees its app and its environment.
    /// - Throws: ``APIError`` `404 unknownToken`.
    func device(_ token: DeviceToken, for caller: KeyAccess) async throws -> DeviceRegistration {
        guard let device = try await store.device(token), caller.sees(device) else { throw Self.unknownToken }
        return device
    }

    /// One notification's way to one device (``DeliveryTrace``), if the caller sees the send. It follows the send, as
    /// the send's outcome pages do: the app decides, not the environment (docs/security.md). A device of another app —
    /// which no send of this one can have reached — lends the trace nothing of its registration (its removal, its
    /// quiet hours): the trace says the send did not target it.
    /// - Throws: ``APIError`` `404 unknownSend`.
    func deliveryTrace(of id: SendID, to token: DeviceToken, for caller: KeyAccess) async throws -> DeliveryTrace {
        let record = try await send(id, for: caller)
        async let registered = store.device(token)
        let stored = try await store.deliveryTrace(of: id, to: token)
        let device = try await registered.flatMap { record.topic == nil || $0.topic == record.topic ? $0 : nil }
        let capped = try await DeliveryTrace.frequencyCapEvidence(
            send: record, stored: stored, device: device,
            appCaps: device.flatMap { apps.apps[$0.topic]?.frequencyCaps } ?? [], store: store)
        return DeliveryTrace(
            send: record, token: token, stored: stored, device: device, frequencyCap: capped,
            ownQuietHours: try await DeliveryTrace.ownQuietHours(of: device, store: store))
    }

    /// The words do not repeat the id: a page that showed it back would look, to a reader, like the send's own.
    static let unknownSend = APIError(
        .notFound, reason: "unknownSend",
        "There is no such send: check its id (POST /api/send answers it; the console lists sends).")

    static let unknownToken = APIError(
        .notFound, reason: "unknownToken", "No device has this token: it was never registered, or it was removed.")
}

extension KeyAccess {
    /// Whether the caller sees a device: its app and its environment.
    func sees(_ device: DeviceRegistration) -> Bool {
        sees(app: device.topic) && sees(environment: device.environment)
    }
}
