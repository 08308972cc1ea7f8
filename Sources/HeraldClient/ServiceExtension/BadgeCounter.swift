import Foundation
public import HeraldCore

/// A badge count kept on the device, so the server can send increments instead of absolute numbers.
///
/// APNs sets the badge to the number in the payload. With a counter in shared storage, the notification service
/// extension reads the payload's `badge` as "add this many": a badge of N adds N, a badge of 0 resets the count, and
/// no badge leaves it alone. The app lowers the count as the user reads items. Give the app and the extension the
/// same storage (a ``FileStorage`` in the App Group container): every change is one atomic read-modify-write, so
/// two notifications handled at once both count.
public struct BadgeCounter: Sendable {
    /// The storage key that holds the count.
    public let key: String
    private let storage: any KeyValueStorage

    /// - Parameters:
    ///   - storage: where the count lives, shared by the app and its extensions.
    ///   - key: the storage key; the default suits one counter per app.
    public init(storage: any KeyValueStorage, key: String = "herald.badge") {
        self.storage = storage
        self.key = key
    }

    /// The current count; 0 when none was stored (or the stored value is unreadable).
    /// - Throws: ``StorageError`` when the storage cannot be read.
    public func count() throws(StorageError) -> Int {
        Self.decode(try storage.data(forKey: key))
    }

    /// Applies a payload's badge: N > 0 adds N, 0 resets, `nil` changes nothing. Negative values subtract, stopping at 0.
    /// - Returns: the badge to show (the new count), or `nil` when the payload had none and the badge stays as it is.
    /// - Throws: ``StorageError`` when the storage cannot be read or written; the count is then unchanged.
    @discardableResult
    public func apply(badge: Int?) throws(StorageError) -> Int? {
        guard let badge else { return nil }
        return try change { current in
            guard badge != 0 else { return 0 }
            let (sum, overflow) = current.addingReportingOverflow(badge)
            return overflow ? Int.max : sum
        }
    }

    /// Applies the payload's badge and rewrites it to the new count, ready to be shown.
    /// - Throws: ``StorageError`` as ``apply(badge:)`` does; the payload is then unchanged.
    public func apply(to payload: inout Payload) throws(StorageError) {
        if let total = try apply(badge: payload.aps.badge) {
            payload.aps.badge = total
        }
    }

    /// Lowers the count, stopping at 0: call it when the user has seen items.
    /// - Returns: the new count, to set as the app icon's badge.
    @discardableResult
    public func decrement(by amount: Int = 1) throws(StorageError) -> Int {
        try change { $0 - amount }
    }

    /// Sets the count.
    /// - Returns: the new count.
    @discardableResult
    public func set(_ count: Int) throws(StorageError) -> Int {
        try change { _ in count }
    }

    /// Sets the count to 0.
    public func reset() throws(StorageError) {
        try set(0)
    }

    private func change(_ transform: (Int) -> Int) throws(StorageError) -> Int {
        try storage.update(key) { data in
            let new = max(0, transform(Self.decode(data)))
            data = Data(String(new).utf8)
            return new
        }
    }

    private static func decode(_ data: Data?) -> Int {
        guard let data, let text = String(data: data, encoding: .utf8), let value = Int(text) else { return 0 }
        return max(0, value)
    }
}
