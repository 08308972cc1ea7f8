public import HeraldCore

/// Reports what became of Herald's notifications, for the service extension and the app: the decisions of delivery
/// receipts in portable code, so the Apple glue only calls it (docs/receiving-pushes.md, "Delivery receipts").
///
/// ```swift
/// let reporter = ReceiptReporter(client: Push.client)
/// await reporter.responded(to: payload, with: action)      // the user tapped it, chose an action, dismissed it
/// ```
///
/// Receipts need the device's token: the one the app registered last through a ``RegistrationClient`` on the same
/// storage (``RegistrationClient/registeredToken()``), so give the extension's client the App Group storage too.
/// Nothing here throws: a receipt that cannot be sent now stays queued on disk and goes with the next send.
public struct ReceiptReporter: Sendable {
    /// What became of a report.
    public enum Outcome: Sendable {
        /// The server has it (with whatever else was queued).
        case sent
        /// Queued on disk; sending failed for now, and ``RegistrationClient/sendPendingReceipts(retry:)`` sends it later.
        case queued(RegistrationError)
        /// Nothing to report: the payload has no `herald` key (receipts are off, or it is not Herald's), or no
        /// token was registered yet; or the receipt could not be queued. The reason is safe to log.
        case skipped(String)
    }

    /// The client that queues and sends.
    public let client: RegistrationClient

    /// - Parameter client: A client on the storage the app registers through (the App Group's, in an extension).
    public init(client: RegistrationClient) {
        self.client = client
    }

    /// Queues a receipt for a notification without sending it: what a service extension does before it hands the
    /// content to the system (then ``send(retry:)``).
    /// - Returns: `nil` when queued, else why nothing was.
    public func queue(_ kind: DeliveryReceipt.Kind, for payload: Payload) -> String? {
        let token: DeviceToken?
        do {
            token = try client.registeredToken()
        } catch {
            return error.message
        }
        guard let token else { return "No token was registered on this storage yet: nothing names the device." }
        guard let receipt = DeliveryReceipt(kind, for: payload, token: token, at: client.wallClock.now()) else {
            return "The notification has no herald key: receipts are off for the app, or it is not from Herald."
        }
        do {
            try client.queue(receipt)
        } catch {
            return error.message
        }
        return nil
    }

    /// Sends what is queued.
    /// - Parameter retry: The retry policy; the client's by default, ``RetryPolicy/never`` in an extension.
    @discardableResult
    public func send(retry: RetryPolicy? = nil) async -> Outcome {
        do {
            try await client.sendPendingReceipts(retry: retry)
            return .sent
        } catch {
            return .queued(error)
        }
    }

    /// Reports a notification received: the app saw it arrive (in the foreground, or a background push).
    @discardableResult
    public func received(_ payload: Payload) async -> Outcome {
        await report(.received, for: payload)
    }

    /// Reports the user's response to a notification: tapping it is `opened`, a button is `action` with its
    /// identifier (an identifier the categories do not know too), dismissing it is `dismissed`.
    @discardableResult
    public func responded(to payload: Payload, with action: NotificationResponseAction) async -> Outcome {
        let kind: DeliveryReceipt.Kind =
            switch action {
            case .open: .opened
            case .dismiss: .dismissed
            case .action(let chosen): .action(chosen.identifier)
            case .unknown(let identifier): .action(identifier)
            }
        return await report(kind, for: payload)
    }

    private func report(_ kind: DeliveryReceipt.Kind, for payload: Payload) async -> Outcome {
        if let reason = queue(kind, for: payload) { return .skipped(reason) }
        return await send()
    }
}
