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
        let trace = try await resources.deliveryTrace(of: id, to: token, for: context.access)
        return .json(trace.json(revealingToken: Self.revealsTokens(to: context)))
    }
}
