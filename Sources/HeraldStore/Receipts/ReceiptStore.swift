/// Delivery receipts: what devices reported about the notifications of a send, stored once per event and counted per
/// send. Methods throw ``StoreError`` (or `CancellationError`).
public protocol ReceiptStore: Sendable {
    /// Records a batch of events in one transaction: all of them, or nothing when the store fails.
    ///
    /// An event counts only for a device APNs accepted a notification of the send for (an outcome `accepted`, found
    /// by send id and token, or by token and `apns-id`); others are ``ReceiptResult/unknownDelivery`` and not stored.
    /// The same event again (send, device, kind and action identifier) is ``ReceiptResult/duplicate`` and counted
    /// once. `opened`, `action` and `dismissed` also record `received` for the device, since they imply it.
    /// - Returns: One result per event, in the order given.
    func recordReceipts(_ events: [ReceiptEvent]) async throws -> [ReceiptResult]

    /// A send's receipt counts; zeros for a send without receipts, or an unknown one.
    func receiptCounts(of id: SendID) async throws -> ReceiptCounts
}
