public import Foundation

/// A directory of its own under the system's temporary directory, made when the value is made and removed with
/// everything in it when the last reference goes, so a test run leaves nothing behind in `/tmp`. A suite that keeps
/// one as a stored property gets a fresh directory per test, since Swift Testing makes a suite value per test.
public final class TemporaryDirectory: Sendable {
    public let url: URL

    /// - Parameter prefix: the start of the directory's name, which ends in a UUID; it says which test left a
    ///   directory behind if a test process is killed.
    public init(prefix: String = "herald-tests") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A file or directory in this one.
    public func appending(_ name: String) -> URL { url.appendingPathComponent(name) }

    public var path: String { url.path }

    deinit { try? FileManager.default.removeItem(at: url) }
}
