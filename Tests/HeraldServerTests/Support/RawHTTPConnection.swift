import Foundation
import NIOCore
import HeraldTesting

/// A plain TCP connection to a loopback server for requests no well-behaved client sends: half-sent heads and
/// bodies, malformed framing, stalls. It reads what the server answers and notices when the server closes.
final class RawHTTPConnection: Sendable {
    private let connection: LoopbackConnection
    private var incoming: AsyncStream<ByteBuffer> { connection.incoming }

    private init(_ connection: LoopbackConnection) { self.connection = connection }

    /// Connects to `127.0.0.1:port`.
    static func connect(port: Int) async throws -> RawHTTPConnection {
        RawHTTPConnection(try await LoopbackConnection.connect(port: port))
    }

    /// Writes text as it is (CRLFs included) and flushes it.
    func write(_ text: String) async throws {
        try await write(Array(text.utf8))
    }

    /// Writes bytes as they are and flushes them.
    func write(_ bytes: [UInt8]) async throws {
        try await connection.write(ByteBuffer(bytes: bytes))
    }

    /// Everything the server sends until it closes the connection: the signal that it gave up on this client.
    func readUntilClosed() async -> String {
        var text = ""
        for await chunk in incoming { text += String(buffer: chunk) }
        return text
    }

    /// Reads until the answer so far contains `marker` (or the server closes), and returns what was read.
    func read(until marker: String) async -> String {
        var text = ""
        for await chunk in incoming {
            text += String(buffer: chunk)
            if text.contains(marker) { break }
        }
        return text
    }

    /// Closes the connection from this side.
    func close() async {
        await connection.close()
    }
}

/// The status code and body of the first HTTP/1.1 response in `text`, for raw-socket tests.
struct RawResponse: CustomStringConvertible {
    let status: Int
    let headers: [(String, String)]
    let body: String

    init?(_ text: String) {
        guard let headEnd = text.range(of: "\r\n\r\n") else { return nil }
        let lines = text[..<headEnd.lowerBound].components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        self.status = status
        headers = lines.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (
                line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            )
        }
        let rest = String(text[headEnd.upperBound...])
        if let length = headers.first(where: { $0.0 == "content-length" }).flatMap({ Int($0.1) }) {
            body = String(decoding: rest.utf8.prefix(length), as: UTF8.self)
        } else {
            body = rest
        }
    }

    func header(_ name: String) -> String? { headers.first { $0.0 == name.lowercased() }?.1 }

    var description: String { "\(status) \(body)" }
}
