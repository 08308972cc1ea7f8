import Foundation
import HeraldCore

/// The delivery receipts waiting to be sent, kept as one JSON record in the shared storage, so the service extension
/// can queue a receipt that the app sends later.
///
/// Every change is one ``KeyValueStorage/update(_:_:)``, atomic across the app and its extensions. At most
/// ``capacity`` receipts wait: a device offline for weeks drops its oldest. A sent batch is removed by value, so two
/// processes sending at once (the server counts a receipt once) never remove each other's receipts.
struct ReceiptQueue: Sendable {
    static let key = "herald.pending-receipts"
    /// The most receipts kept.
    static let capacity = 500

    let storage: any KeyValueStorage

    /// Appends receipts, dropping the oldest beyond ``capacity``.
    func append(_ receipts: [JSONValue]) throws(StorageError) {
        try storage.update(Self.key) { data in
            var queued = Self.decode(data)
            queued.append(contentsOf: receipts)
            if queued.count > Self.capacity { queued.removeFirst(queued.count - Self.capacity) }
            data = Self.encode(queued)
        }
    }

    /// The oldest receipts, at most `limit`.
    func peek(_ limit: Int) throws(StorageError) -> [JSONValue] {
        Array(Self.decode(try storage.data(forKey: Self.key)).prefix(limit))
    }

    /// Every queued receipt.
    func all() throws(StorageError) -> [JSONValue] {
        Self.decode(try storage.data(forKey: Self.key))
    }

    /// Removes one queued copy of each receipt given.
    func remove(_ receipts: [JSONValue]) throws(StorageError) {
        try storage.update(Self.key) { data in
            var queued = Self.decode(data)
            for receipt in receipts {
                if let index = queued.firstIndex(of: receipt) { queued.remove(at: index) }
            }
            data = queued.isEmpty ? nil : Self.encode(queued)
        }
    }

    /// The receipts of a stored record; none when it is missing or unreadable (a corrupt record is dropped, not
    /// worth failing a launch or a notification over).
    private static func decode(_ data: Data?) -> [JSONValue] {
        guard let data, let json = try? JSONValue(parsing: data), case .array(let receipts)? = json["receipts"] else {
            return []
        }
        return receipts
    }

    private static func encode(_ receipts: [JSONValue]) -> Data {
        Data(JSONValue.object(["receipts": .array(receipts)]).jsonBytes)
    }
}
