import Synchronization

#if canImport(FoundationNetworking)
public import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif
public import HeraldCore

/// Downloads a notification's media (the book's `media-url`) to a temporary file that a notification attachment can
/// take, within a time limit and a size limit.
///
/// The file keeps the URL's extension (or one derived from the response's content type), because the system decides
/// the attachment's type from it. Bytes are streamed to disk as they arrive, and the download stops as soon as it
/// passes the size limit, so a service extension's small memory budget is never at risk.
///
/// The time limit is measured on an injected clock, so tests never wait.
public final class MediaDownloader: Sendable {
    /// The limits of a download.
    public struct Configuration: Sendable {
        /// The largest file accepted, in bytes.
        public var maximumBytes: Int
        /// How long a download may take in total. Keep it well under the extension's 30 seconds.
        public var timeLimit: Duration
        /// Whether plain `http://` media URLs are allowed (for a development server).
        public var allowsInsecureHTTP: Bool
        /// Where files are written.
        public var directory: URL

        /// - Parameters:
        ///   - maximumBytes: the size limit; 10 MiB by default, Apple's limit for images.
        ///   - timeLimit: the time limit; 20 seconds by default.
        ///   - allowsInsecureHTTP: allow `http://` URLs.
        ///   - directory: where files go; the temporary directory by default.
        public init(
            maximumBytes: Int = 10 * 1024 * 1024, timeLimit: Duration = .seconds(20), allowsInsecureHTTP: Bool = false,
            directory: URL = FileManager.default.temporaryDirectory
        ) {
            self.maximumBytes = maximumBytes
            self.timeLimit = timeLimit
            self.allowsInsecureHTTP = allowsInsecureHTTP
            self.directory = directory
        }
    }

    /// The limits.
    public let configuration: Configuration
    private let clock: any Clock<Duration>
    private let session: URLSession
    private let transfers: TransferDelegate

    /// - Parameters:
    ///   - configuration: the limits.
    ///   - sessionConfiguration: the URL session's settings; ephemeral by default, so nothing is cached.
    ///   - clock: what the time limit is measured on.
    public init(
        configuration: Configuration = Configuration(), sessionConfiguration: URLSessionConfiguration = .ephemeral,
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.configuration = configuration
        self.clock = clock
        let transfers = TransferDelegate()
        self.transfers = transfers
        self.session = URLSession(configuration: sessionConfiguration, delegate: transfers, delegateQueue: nil)
    }

    deinit {
        // The session keeps its delegate alive until it is invalidated.
        session.invalidateAndCancel()
    }

    /// Downloads a URL to a new file in ``Configuration/directory``.
    ///
    /// The caller owns the file: hand it to `UNNotificationAttachment`, which moves it, or delete it. Nothing is left
    /// behind when the download fails.
    /// - Returns: the file and what was learned about it.
    /// - Throws: ``MediaDownloadError``: `insecureURL`/`unsupportedURL` before any request, `httpStatus` for a
    ///   non-2xx answer, `tooLarge` when the declared or received size passes the limit, `timedOut` when the time
    ///   limit passes, `unknownType` when neither the URL nor the content type gives a file extension, `network` and
    ///   `fileSystem` for the rest, and `cancelled` when the task is cancelled.
    public func download(from url: URL) async throws(MediaDownloadError) -> MediaAttachmentFile {
        try checkScheme(of: url)
        let partial = configuration.directory.appendingPathComponent("herald-\(UUID().uuidString).part")
        do throws(MediaDownloadError) {
            let received = try await withTimeLimit { [self] () async throws(MediaDownloadError) in
                try await fetch(url, to: partial)
            }
            guard let fileExtension = Self.fileExtension(for: url, mimeType: received.mimeType) else {
                throw MediaDownloadError(
                    .unknownType, url: url,
                    "The media at \(url.redactedForLog) has no file extension and the content type \(received.mimeType ?? "(none)") is not one the SDK knows: put the extension in the URL (photo.jpg)."
                )
            }
            let file = partial.deletingPathExtension().appendingPathExtension(fileExtension)
            do {
                try FileManager.default.moveItem(at: partial, to: file)
            } catch {
                throw MediaDownloadError(
                    .fileSystem, url: url,
                    "Could not name the downloaded file \(file.lastPathComponent) (\(error.localizedDescription)).")
            }
            return MediaAttachmentFile(fileURL: file, byteCount: received.byteCount, mimeType: received.mimeType)
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }

    private func checkScheme(of url: URL) throws(MediaDownloadError) {
        switch url.scheme?.lowercased() {
        case "https":
            return
        case "http" where configuration.allowsInsecureHTTP:
            return
        case "http":
            throw MediaDownloadError(
                .insecureURL, url: url,
                "The media URL \(url.redactedForLog) uses plain HTTP: serve media over https, or set allowsInsecureHTTP for a development server."
            )
        default:
            throw MediaDownloadError(
                .unsupportedURL, url: url, "The media URL \(url.redactedForLog) is not an https URL.")
        }
    }

    /// Runs `body` against the time limit on the injected clock; whichever ends first wins, and the other is cancelled.
    private func withTimeLimit<T: Sendable>(
        _ body: @escaping @Sendable () async throws(MediaDownloadError) -> T
    ) async throws(MediaDownloadError) -> T {
        let limit = configuration.timeLimit
        let clock = self.clock
        do {
            return try await withThrowingTaskGroup(of: T.self) { group in
                group.addTask { try await body() }
                group.addTask {
                    try await clock.sleep(for: limit)
                    throw TimeLimitReached()
                }
                defer { group.cancelAll() }
                // Both tasks either return or throw, so there is always a first result.
                return try await group.next()!
            }
        } catch let error as MediaDownloadError {
            throw error
        } catch is TimeLimitReached {
            throw MediaDownloadError(
                .timedOut, url: nil,
                "The media download did not finish within \(limit): the attachment is left out; use smaller media or a faster server."
            )
        } catch {
            throw MediaDownloadError(.cancelled, url: nil, "The media download was cancelled.")
        }
    }

    private struct TimeLimitReached: Error {}

    /// Streams a URL into a file through the session delegate.
    private func fetch(_ url: URL, to file: URL) async throws(MediaDownloadError) -> ReceivedFile {
        guard FileManager.default.createFile(atPath: file.path, contents: nil),
            let handle = try? FileHandle(forWritingTo: file)
        else {
            throw MediaDownloadError(
                .fileSystem, url: url,
                "Could not create a file in \(configuration.directory.path): check that the directory exists and is writable."
            )
        }
        defer { try? handle.close() }
        let task = session.dataTask(with: URLRequest(url: url))
        let limit = configuration.maximumBytes
        let transfers = self.transfers
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    transfers.start(task, url: url, file: handle, limit: limit, continuation: continuation)
                }
            } onCancel: {
                task.cancel()
            }
        } catch let error as MediaDownloadError {
            throw error
        } catch {
            throw MediaDownloadError(.cancelled, url: url, "The media download was cancelled.")
        }
    }

    /// The extension for the attachment file: the URL's own when it names a media type (`photo.jpg`), else one for
    /// the content type (`image.php` serving `image/png` becomes `png`), else the URL's own whatever it is.
    static func fileExtension(for url: URL, mimeType: String?) -> String? {
        let own = url.pathExtension.lowercased()
        if mediaExtensions.contains(own) { return own }
        let essence = mimeType?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if let essence, let known = knownExtensions[essence] { return known }
        return own.isEmpty ? nil : own
    }

    /// Extensions the system recognises as attachment media.
    static let mediaExtensions: Set<String> = Set(knownExtensions.values).union(["jpeg", "tif", "tiff", "mpeg", "mp4a"])

    /// The media types notification attachments support, with the extension the system recognises.
    static let knownExtensions: [String: String] = [
        "image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/heic": "heic", "image/webp": "webp",
        "audio/mpeg": "mp3", "audio/mp4": "m4a", "audio/x-m4a": "m4a", "audio/aiff": "aiff", "audio/x-aiff": "aiff",
        "audio/wav": "wav", "audio/x-wav": "wav", "video/mp4": "mp4", "video/quicktime": "mov", "video/mpeg": "mpg",
        "video/x-m4v": "m4v", "video/x-msvideo": "avi",
    ]
}

/// A downloaded media file, ready to become a notification attachment.
public struct MediaAttachmentFile: Sendable, Hashable {
    /// The file, in the downloader's directory, named with a media extension.
    public let fileURL: URL
    /// Its size in bytes.
    public let byteCount: Int
    /// The response's `Content-Type`, if any.
    public let mimeType: String?
}

/// What a finished transfer delivered.
struct ReceivedFile: Sendable {
    var byteCount: Int
    var mimeType: String?
}

/// The session delegate: routes each task's response and bytes to its transfer, enforces the size limit as bytes
/// arrive, and resumes the waiting download exactly once.
private final class TransferDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Transfer {
        var url: URL
        var file: FileHandle
        var limit: Int
        var received = 0
        var mimeType: String?
        var continuation: CheckedContinuation<ReceivedFile, any Error>
    }

    private let transfers = Mutex<[Int: Transfer]>([:])

    func start(
        _ task: URLSessionDataTask, url: URL, file: FileHandle, limit: Int,
        continuation: CheckedContinuation<ReceivedFile, any Error>
    ) {
        transfers.withLock {
            $0[task.taskIdentifier] = Transfer(url: url, file: file, limit: limit, continuation: continuation)
        }
        task.resume()
    }

    /// Ends a transfer with an error and stops its task; later callbacks for it are ignored.
    private func fail(_ task: URLSessionTask, _ makeError: (Transfer) -> MediaDownloadError) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        transfer.continuation.resume(throwing: makeError(transfer))
        task.cancel()
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 200
        let declared = response.expectedContentLength
        let verdict: ((Transfer) -> MediaDownloadError)? = transfers.withLock { transfers in
            guard var transfer = transfers[dataTask.taskIdentifier] else { return nil }
            if !(200...299).contains(status) {
                return {
                    MediaDownloadError(
                        .httpStatus, url: $0.url, status: status,
                        "The media server answered \(status) for \($0.url.redactedForLog): check the URL.")
                }
            }
            if declared > Int64(transfer.limit) {
                return {
                    MediaDownloadError(
                        .tooLarge, url: $0.url,
                        "The media at \($0.url.redactedForLog) is \(declared) bytes, more than the \($0.limit)-byte limit: send a smaller file or raise maximumBytes."
                    )
                }
            }
            transfer.mimeType = response.mimeType
            transfers[dataTask.taskIdentifier] = transfer
            return nil
        }
        if let verdict {
            fail(dataTask, verdict)
            completionHandler(.cancel)
        } else {
            completionHandler(.allow)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        enum Outcome {
            case written, tooLarge
            case writeFailed(String)
            case gone
        }
        let outcome: Outcome = transfers.withLock { transfers in
            guard var transfer = transfers[dataTask.taskIdentifier] else { return .gone }
            transfer.received += data.count
            guard transfer.received <= transfer.limit else { return .tooLarge }
            do {
                try transfer.file.write(contentsOf: data)
            } catch {
                return .writeFailed(error.localizedDescription)
            }
            transfers[dataTask.taskIdentifier] = transfer
            return .written
        }
        switch outcome {
        case .written, .gone:
            break
        case .tooLarge:
            fail(dataTask) {
                MediaDownloadError(
                    .tooLarge, url: $0.url,
                    "The media at \($0.url.redactedForLog) is larger than the \($0.limit)-byte limit: send a smaller file or raise maximumBytes."
                )
            }
        case .writeFailed(let problem):
            fail(dataTask) {
                MediaDownloadError(
                    .fileSystem, url: $0.url, "Could not write the downloaded media (\(problem)): the disk may be full."
                )
            }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            let cancelled = (error as? URLError)?.code == .cancelled
            transfer.continuation.resume(
                throwing: cancelled
                    ? MediaDownloadError(.cancelled, url: transfer.url, "The media download was cancelled.")
                    : MediaDownloadError(
                        .network, url: transfer.url,
                        "The media download from \(transfer.url.redactedForLog) failed (\(error.localizedDescription)): the attachment is left out."
                    ))
        } else {
            transfer.continuation.resume(
                returning: ReceivedFile(byteCount: transfer.received, mimeType: transfer.mimeType))
        }
    }
}

/// Why media could not be downloaded. The notification should still be shown, without the attachment.
public struct MediaDownloadError: CodedError, Hashable {
    /// The kind of failure.
    public typealias Code = ErrorCode<MediaDownloadError>

    /// What failed.
    public let code: Code
    /// The media URL, when known.
    public let url: URL?
    /// The HTTP status, for `httpStatus`.
    public let status: Int?
    /// What went wrong and what to do.
    public let message: String

    init(_ code: Code, url: URL?, status: Int? = nil, _ message: String) {
        self.code = code
        self.url = url
        self.status = status
        self.message = message
    }
}

extension ErrorCode where Domain == MediaDownloadError {
    /// A plain `http://` URL, not allowed.
    public static let insecureURL = Self("insecureURL")
    /// Not an http(s) URL.
    public static let unsupportedURL = Self("unsupportedURL")
    /// The server answered with a status other than 2xx.
    public static let httpStatus = Self("httpStatus")
    /// The declared or received size passed the limit.
    public static let tooLarge = Self("tooLarge")
    /// The time limit passed.
    public static let timedOut = Self("timedOut")
    /// No file extension could be found for the media.
    public static let unknownType = Self("unknownType")
    /// The connection failed.
    public static let network = Self("network")
    /// The file could not be created, written or renamed.
    public static let fileSystem = Self("fileSystem")
    /// The task was cancelled.
    public static let cancelled = Self("cancelled")
}

extension URL {
    /// Scheme, host and path only: a signed media URL's query often carries a credential.
    var redactedForLog: String {
        var components = URLComponents(url: self, resolvingAgainstBaseURL: false)
        components?.query = nil
        components?.fragment = nil
        components?.user = nil
        components?.password = nil
        return components?.string ?? "(media URL)"
    }
}
