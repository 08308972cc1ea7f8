public import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Android)
import Android
#endif

/// Storage in a directory, one file per key, that an app and its extensions can share.
///
/// Every write goes to a temporary file that is then renamed over the old one, so a reader never sees half a value,
/// and every ``update(_:_:)`` holds an exclusive `flock` on `.<key>.lock` beside it, so an app and its notification
/// service extension can both count a badge without losing an increment. On Apple platforms, put the directory in
/// the App Group container (`FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`) to share it.
public struct FileStorage: KeyValueStorage {
    /// The directory that holds the files; created on the first write.
    public let directory: URL

    /// - Parameter directory: where to keep the values. It is created, with its parents, when first written to.
    public init(directory: URL) {
        self.directory = directory
    }

    public func data(forKey key: String) throws(StorageError) -> Data? {
        try StorageError.checkKey(key)
        let file = fileURL(forKey: key)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        do {
            return try Data(contentsOf: file)
        } catch {
            throw StorageError(
                .readFailed,
                "Could not read \(file.path) (\(error.localizedDescription)): check that the file is readable by this app."
            )
        }
    }

    public func update<Result>(_ key: String, _ transform: (inout Data?) -> Result) throws(StorageError) -> Result {
        try StorageError.checkKey(key)
        try createDirectory()
        let lock = try FileLock(path: directory.appendingPathComponent(".\(key).lock").path)
        defer { lock.unlock() }

        let old = try data(forKey: key)
        var value = old
        let result = transform(&value)
        guard value != old else { return result }
        let file = fileURL(forKey: key)
        do {
            if let value {
                try value.write(to: file, options: .atomic)
            } else {
                try FileManager.default.removeItem(at: file)
            }
        } catch {
            throw StorageError(
                .writeFailed,
                "Could not write \(file.path) (\(error.localizedDescription)): check that the directory is writable and the disk is not full."
            )
        }
        return result
    }

    private func fileURL(forKey key: String) -> URL { directory.appendingPathComponent(key) }

    private func createDirectory() throws(StorageError) {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw StorageError(
                .writeFailed,
                "Could not create the storage directory \(directory.path) (\(error.localizedDescription)): check the App Group identifier or choose a writable directory."
            )
        }
    }
}

/// An exclusive `flock` held from `init` until `unlock()`: serialises threads and processes alike, because each
/// holder opens the lock file itself.
private struct FileLock {
    private let descriptor: Int32

    init(path: String) throws(StorageError) {
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StorageError(
                .lockFailed,
                "Could not open the lock file \(path) (errno \(errno)): check that the storage directory is writable.")
        }
        var result: Int32
        repeat { result = flock(descriptor, LOCK_EX) } while result != 0 && errno == EINTR
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw StorageError(
                .lockFailed,
                "Could not lock \(path) (errno \(code)): the file system may not support locks; use another directory.")
        }
        self.descriptor = descriptor
    }

    func unlock() {
        // Closing the descriptor releases the lock.
        close(descriptor)
    }
}
