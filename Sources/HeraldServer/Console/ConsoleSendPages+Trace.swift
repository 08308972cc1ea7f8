import Foundation
import HeraldCore
import HeraldStore
import Hummingbird

extension ConsoleSendPages {
    /// One notification's delivery trace (``DeliveryTrace``): what `GET /api/sends/{id}/devices/{token}` answers, for
    /// people. Linked from a send's devices and a device's deliveries.
    @Sendable func delivery(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id").flatMap(SendID.init) else { throw Self.noSuchSend }
        guard let hex = context.parameters.get("token"), let token = try? DeviceToken(hex: hex) else {
            throw VisibleResources.unknownToken
        }
        // The same look and the same access check as GET /api/sends/{id}/devices/{token}: this page once had a copy
        // of its own, which did not check the session's apps.
        let trace = try await resources.deliveryTrace(of: id, to: token, for: Self.access(context))
        let record = trace.send
        let view = DeliveryView(
            sendID: id.description, target: record.target, summary: record.summary, token: token.hex,
            suffix: String(token.hex.suffix(8)), verdict: trace.verdict.text, verdictCode: trace.verdict.code,
            steps: trace.steps.map { DeliveryView.Step(event: $0.event, at: Self.display($0.at), text: $0.text) },
            apnsUniqueID: trace.apnsUniqueID,
            console: trace.apnsUniqueID == nil ? nil : DeliveryTrace.pushNotificationsConsole)
        return renderer.page(
            "delivery", title: "Delivery to …\(token.hex.suffix(8))", section: .sends, view: view, context: context)
    }

    /// delivery.mustache's values.
    struct DeliveryView: ConsoleView {
        struct Step {
            let event: String
            let at: String
            let text: String
        }

        let sendID: String
        let target: String
        let summary: String
        let token: String
        let suffix: String
        let verdict: String
        let verdictCode: String
        let steps: [Step]
        /// APNs' id of the notification, in development only; with the link to Apple's Push Notifications Console.
        let apnsUniqueID: String?
        let console: String?
    }
}
