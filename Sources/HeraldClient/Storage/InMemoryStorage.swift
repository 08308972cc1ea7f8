public import Foundation
import Synchronization

/// Storage that lives as long as the object: for tests, previews, and apps that need nothing to survive a relaunch.
public final class InMemoryStorage: KeyValueStorage {
    private let values: Mutex<[String: Data]>

    /// Starts with the given values (none by default).
    public init(_ initial: [String: Data] = [:]) {
        values = Mutex(initial)
    }

    public func data(forKey key: String) throws(StorageError) -> Data? {
        try StorageError.checkKey(key)
        return values.withLock { $0[key] }
    }

    public func update<Result>(_ key: String, _ transform: (inout Data?) -> Result) throws(StorageError) -> Result {
        try StorageError.checkKey(key)
        return values.withLock { values in transform(&values[key]) }
    }
}
