import Foundation
import HeraldTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 with a free port, for tests of the SDK's `URLSession` code.
///
/// One thread accepts; each connection gets a thread that reads one request, asks the handler what to do, and closes
/// the connection (`Connection: close`). The handler can answer, drop the connection without an answer (a network
/// error for the client), or hold it open until the client gives up or the server stops. Plain POSIX sockets keep NIO
/// out of the SDK's dependencies. Always stop the server: ``withLoopbackServer(_:_:)`` does.
final class LoopbackHTTPServer: Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        /// Header names are lowercased.
        var headers: [String: String]
        var body: Data

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    struct Response: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body = Data()
        /// Whether to send `Content-Length`; without it the body ends when the connection closes.
        var declaresLength = true

        static func json(_ status: Int, _ text: String) -> Response {
            Response(status: status, headers: ["Content-Type": "application/json"], body: Data(text.utf8))
        }
    }

    enum Reply: Sendable {
        case respond(Response)
        /// Close the connection without answering.
        case dropConnection
        /// Keep the connection open, unanswered, until the client closes it or the server stops.
        case hold
    }

    /// Decides the reply to a request; `index` counts requests from 0, so "fail twice, then succeed" is `index < 2`.
    typealias Handler = @Sendable (_ request: Request, _ index: Int) -> Reply

    private struct State {
        var requests: [Request] = []
        var connections: Set<Int32> = []
        var stopped = false
    }

    let port: UInt16
    private let listener: Int32
    private let handler: Handler
    private let state = Mutex(State())
    private let received = CountSignal()

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Every request received so far, in order.
    var requests: [Request] { state.withLock { $0.requests } }

    init(handler: @escaping Handler) throws {
        self.handler = handler
        let descriptor = socket(AF_INET, Self.streamType, 0)
        guard descriptor >= 0 else { throw ServerError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound, listen(descriptor, 64) == 0 else {
            close(descriptor)
            throw ServerError("could not listen on 127.0.0.1: errno \(errno)")
        }
        listener = descriptor
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Stops accepting and ends every open connection. The threads close their own descriptors as they exit.
    func stop() {
        let connections = state.withLock { state in
            state.stopped = true
            return state.connections
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for connection in connections { shutdown(connection, Int32(SHUT_RDWR)) }
    }

    /// Returns once `count` requests have arrived.
    func waitForRequests(count: Int) async {
        await received.wait(untilAtLeast: count)
    }

    // MARK: - Threads

    private func acceptLoop() {
        defer { close(listener) }
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let accepted = state.withLock { state in
                if state.stopped { return false }
                state.connections.insert(connection)
                return true
            }
            guard accepted else {
                close(connection)
                return
            }
            Thread.detachNewThread { [self] in serve(connection) }
        }
    }

    private func serve(_ connection: Int32) {
        defer {
            _ = state.withLock { $0.connections.remove(connection) }
            close(connection)
        }
        guard let request = readRequest(from: connection) else { return }
        let index = state.withLock { state in
            state.requests.append(request)
            return state.requests.count - 1
        }
        let reply = handler(request, index)
        // Counted after the handler has decided, so a test that waits for a request sees the handler's effects.
        state.withLock { received.update($0.requests.count) }
        switch reply {
        case .respond(let response):
            write(Self.encode(response), to: connection)
            shutdown(connection, Int32(SHUT_WR))
        case .dropConnection:
            return
        case .hold:
            // Block until the client closes the connection or stop() shuts it down.
            var byte: UInt8 = 0
            while recv(connection, &byte, 1, 0) > 0 {}
        }
    }

    private func readRequest(from connection: Int32) -> Request? {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            buffer.append(contentsOf: chunk[0..<count])
            headerEnd = Self.firstIndex(of: separator, in: buffer)
            if buffer.count > 64 * 1024 { return nil }
        }
        let head = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers = [String: String]()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        if headers["expect"]?.lowercased() == "100-continue" {
            write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8), to: connection)
        }
        var body = Array(buffer[(headerEnd! + separator.count)...])
        let expected = headers["content-length"].flatMap(Int.init) ?? 0
        while body.count < expected {
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { return nil }
            body.append(contentsOf: chunk[0..<count])
        }
        return Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: Data(body))
    }

    private func write(_ bytes: [UInt8], to connection: Int32) {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Self.sendFlags) }
            guard count > 0 else { return }
            sent += count
        }
    }

    private static func encode(_ response: Response) -> [UInt8] {
        var head = "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\nConnection: close\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        if response.declaresLength { head += "Content-Length: \(response.body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + Array(response.body)
    }

    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 429: "Too Many Requests"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }

    #if canImport(Glibc) || canImport(Musl)
    private static let streamType = Int32(SOCK_STREAM.rawValue)
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    #else
    private static let streamType = SOCK_STREAM
    private static let sendFlags: Int32 = 0
    #endif

    struct ServerError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

/// Runs `body` with a loopback server and stops the server afterwards, whatever happens.
@discardableResult
func withLoopbackServer<T>(
    _ handler: @escaping LoopbackHTTPServer.Handler, _ body: (LoopbackHTTPServer) async throws -> T
) async throws -> T {
    let server = try LoopbackHTTPServer(handler: handler)
    defer { server.stop() }
    return try await body(server)
}
