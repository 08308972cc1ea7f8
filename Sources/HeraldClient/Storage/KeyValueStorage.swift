public import Foundation
public import HeraldCore

/// A small persistent slot store: where the SDK keeps its installation id, a pending registration and the badge count.
///
/// An app and its notification service extension are two processes; give both the same storage (for example a
/// ``FileStorage`` in the App Group container) and they see the same values. Implementations must make
/// ``update(_:_:)`` atomic: no other reader or writer, in this process or another, may interleave with it.
public protocol KeyValueStorage: Sendable {
    /// The bytes stored under a key, or `nil` when there are none.
    /// - Throws: ``StorageError`` when the key is invalid or the value cannot be read.
    func data(forKey key: String) throws(StorageError) -> Data?

    /// Reads, changes and writes back the value under a key as one atomic step.
    ///
    /// `transform` receives the current value (`nil` when absent) and may replace it; setting it to `nil` removes it.
    /// The new value is stored only if it differs from the old one.
    /// - Returns: what `transform` returns.
    /// - Throws: ``StorageError`` when the key is invalid or the value cannot be read or written; the stored value is
    ///   then unchanged.
    func update<Result>(_ key: String, _ transform: (inout Data?) -> Result) throws(StorageError) -> Result
}

extension KeyValueStorage {
    /// Stores bytes under a key, or removes the key when `data` is `nil`.
    /// - Throws: ``StorageError`` when the value cannot be written.
    public func set(_ data: Data?, forKey key: String) throws(StorageError) {
        try update(key) { $0 = data }
    }
}

/// Why a value could not be read or stored.
public struct StorageError: CodedError, Hashable {
    /// The kind of failure.
    public typealias Code = ErrorCode<StorageError>

    /// What failed.
    public let code: Code
    /// What went wrong and what to do.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Checks that a key can name a file on every platform.
    static func checkKey(_ key: String) throws(StorageError) {
        let valid =
            !key.isEmpty && key.utf8.count <= 128 && !key.hasPrefix(".")
            && key.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
        guard valid else {
            throw StorageError(
                .invalidKey,
                "The storage key \"\(key)\" is not usable: use 1 to 128 letters, digits, '.', '-' or '_', not starting with '.'."
            )
        }
    }
}

extension ErrorCode where Domain == StorageError {
    /// The key is empty, starts with a dot or has characters other than letters, digits, `.`, `-` and `_`.
    public static let invalidKey = Self("invalidKey")
    /// The value exists but could not be read.
    public static let readFailed = Self("readFailed")
    /// The value could not be written or removed.
    public static let writeFailed = Self("writeFailed")
    /// The lock that serialises processes could not be taken.
    public static let lockFailed = Self("lockFailed")
}
