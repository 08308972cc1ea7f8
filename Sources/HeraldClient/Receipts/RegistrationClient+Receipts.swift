import HeraldCore

#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
#else
import Foundation
#endif

extension RegistrationClient {
    /// The most receipts one request carries (the server takes up to 100).
    static let receiptBatch = 100

    /// Queues a delivery receipt in the storage, to be sent by ``sendPendingReceipts(retry:)``.
    ///
    /// Fast and local: the service extension queues its `received` before it hands the notification to the system,
    /// and sends afterwards, or the app sends it at its next ``sendPendingReceipts(retry:)``.
    /// - Throws: ``RegistrationError``: `invalidRegistration` for an action identifier the server would refuse,
    ///   `storageFailed` when the queue cannot be written.
    public func queue(_ receipt: DeliveryReceipt) throws(RegistrationError) {
        try receipt.validate()
        do {
            try ReceiptQueue(storage: storage).append([receipt.json])
        } catch {
            throw RegistrationError(
                .storageFailed, "Could not queue the delivery receipt: \(error.message)", underlying: error)
        }
    }

    /// How many receipts wait to be sent.
    /// - Throws: ``RegistrationError`` (`storageFailed`) when the queue cannot be read.
    public func pendingReceiptCount() throws(RegistrationError) -> Int {
        do {
            return try ReceiptQueue(storage: storage).all().count
        } catch {
            throw RegistrationError(
                .storageFailed, "Could not read the queued delivery receipts: \(error.message)", underlying: error)
        }
    }

    /// Sends the queued receipts to `POST /api/events`, in batches of up to 100, retried like registrations: network
    /// errors, `429` and `5xx` under the retry policy, then the receipts stay queued for the next call. A batch the
    /// server refuses (another `4xx`) is dropped, since sending it again would get the same answer.
    ///
    /// Call it when the app starts or becomes active (``PushNotifications`` does), and after queuing a receipt.
    /// - Parameter retry: The retry policy; the configuration's by default. A notification service extension, short
    ///   on time, passes ``RetryPolicy/never``: what fails stays queued for the app.
    /// - Returns: How many receipts the server took (recorded, or known already).
    /// - Throws: ``RegistrationError``: `gaveUp` or `cancelled` (the rest stays queued), `rejected` (that batch was
    ///   dropped), `storageFailed`.
    @discardableResult
    public func sendPendingReceipts(retry: RetryPolicy? = nil) async throws(RegistrationError) -> Int {
        let queue = ReceiptQueue(storage: storage)
        var sent = 0
        while true {
            let batch: [JSONValue]
            do {
                batch = try queue.peek(Self.receiptBatch)
            } catch {
                throw RegistrationError(
                    .storageFailed, "Could not read the queued delivery receipts: \(error.message)", underlying: error)
            }
            guard !batch.isEmpty else { return sent }
            var request = makeRequest(url: configuration.eventsURL, method: "POST")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(JSONValue.object(["events": .array(batch)]).jsonBytes)
            do throws(RegistrationError) {
                _ = try await send(
                    request, what: "report of \(batch.count) delivery receipt\(batch.count == 1 ? "" : "s")",
                    acceptsNotFound: false, policy: retry)
            } catch {
                switch error.code {
                case .gaveUp, .cancelled:
                    throw error.savedForLater(by: "sendPendingReceipts()")
                default:
                    try? queue.remove(batch)
                    throw error
                }
            }
            do {
                try queue.remove(batch)
            } catch {
                throw RegistrationError(
                    .storageFailed,
                    "The server took \(batch.count) delivery receipts, but they could not be taken off the queue (\(error.message)): they will be sent again, and counted once.",
                    underlying: error)
            }
            sent += batch.count
        }
    }
}
