import Foundation
import HeraldCore
extension StatementStore {
    public func receiptCounts(of id: SendID) async throws -> ReceiptCounts {
        try await readRows("read a send's receipts", StoreSQL.receiptCounts(of: id, dialect)).first.map {
            try ReceiptCounts(stored: $0)
        } ?? ReceiptCounts()
    }

    /// The send as cancelled, or as it is when it was not cancellable.
    public func cancelSend(_ id: SendID) async throws -> SendRecord? {
        let (cancelled, found) = try await writeRows(
            "cancel a send", [StoreSQL.cancelSend(id, at: clock.now(), dialect), StoreSQL.selectSend(id, dialect)]
        ).pair
        return try (cancelled.first ?? found.first)?.send()
    }
}
