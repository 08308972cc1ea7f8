import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension SendController {
    /// `GET /api/sends/{id}/devices/{token}`: one notification's delivery trace (``DeliveryTrace``): `404 unknownSend`
    /// for an unknown send; a device the send never reached answers `200` with the verdict `notTargeted` (or
    /// `pending` while the send runs).
    @Sendable func trace(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id").flatMap(SendID.init) else {
            throw APIError.invalidField("id", "a send id is a UUID, as POST /api/send answered")
        }
        guard let hex = context.parameters.get("token"), let token = try? DeviceToken(hex: hex) else {
            throw APIError.invalidField("token", "a device token is an even number of hex digits, as the app registered it")
        }
        // Another app's send is as unknown as a missing one (docs/security.md).
        guard let record = try await store.send(id), context.access.sees(app: record.topic) else {
            throw APIError(.notFound, reason: "unknownSend", "There is no send \(id): check the id POST /api/send answered.")
        }
        async let device = store.device(token)
        let stored = try await store.deliveryTrace(of: id, to: token)
        let found = try await device
        let capped = try await DeliveryTrace.frequencyCapEvidence(
            send: record, stored: stored, device: found, appCaps: found.flatMap { apps.apps[$0.topic]?.frequencyCaps } ?? [],
            store: store)
        let trace = DeliveryTrace(
            send: record, token: token, stored: stored, device: found, frequencyCap: capped,
            ownQuietHours: try await DeliveryTrace.ownQuietHours(of: found, store: store))
        return .json(trace.json(revealingToken: Self.revealsTokens(to: context)))
    }
}
