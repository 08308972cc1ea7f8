import HeraldEmulator
import NIOCore
import NIOPosix
import Testing

/// The raw HTTP/2 client the conformance tests use: a server that goes silent must fail a test at the client's
/// deadline, with an error that says so, not hang it until the suite's time limit.
@Suite("Test support: raw HTTP/2 connection", .timeLimit(.minutes(1)))
struct RawHTTP2ConnectionTests {
    let fixture = EmulatorFixture()

    @Test("waiting for frames from a server that sends nothing ends at the deadline with TimedOut")
    func silentServer() async throws {
        // Accepts connections and never answers, not even the TLS handshake.
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(silent.localAddress?.port)
        try await fixture.run { emulator in
            let connection = try await RawHTTP2Connection.connect(
                port: port, trustRootPEM: try #require(emulator.certificateAuthorityPEM))
            await #expect(throws: RawHTTP2Connection.TimedOut.self) {
                try await connection.frames(until: { _ in false }, timeout: .milliseconds(200))
            }
            await connection.close()
        }
        try await silent.close()
    }
}
