import Foundation
import HeraldAPNS
import HeraldCore
import HeraldEmulator
import HeraldTesting
import NIOCore
import NIOPosix
import Synchronization
import Testing

private let nginxPath = ["/usr/sbin/nginx", "/usr/bin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// The sender against nginx's HTTP/2: an implementation that shares nothing with Herald's framing, so a framing bug
/// the sender and the emulator happened to share would show here. CI installs nginx; elsewhere the suite runs when
/// nginx is installed.
@Suite("Sender against nginx's HTTP/2", .enabled(if: nginxPath != nil || ProcessInfo.processInfo.environment["CI"] != nil))
struct NginxInteropTests {
    /// nginx on loopback TLS: HTTP/2 with few streams per connection and a 1 KB initial stream window, passing each
    /// request to a plain HTTP/1.1 server inside the same nginx so that the body is read and logged as JSON. The
    /// upstream answers like APNs: 200 with the apns-id, or 400 `BadDeviceToken` for tokens ending in `bad0`.
    struct Sink {
        let directory: URL
        let port: Int
        let caPEM: String
        let process: ChildProcess

        /// Starts nginx on two ports the kernel just handed out; when another process took one of them in between
        /// (tests run in parallel), on two new ones.
        static func start() async throws -> Sink {
            for _ in 1..<3 {
                do {
                    return try await startOnce()
                } catch let error as NginxFailed where error.description.contains("Address already in use") {
                    continue
                }
            }
            return try await startOnce()
        }

        private static func startOnce() async throws -> Sink {
            let nginx = try #require(nginxPath, "nginx is missing: apt-get install nginx")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-nginx-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let authority = try LocalCertificateAuthority()
            let server = try authority.issueServerCertificate()
            try server.certificatePEM.write(to: directory.appendingPathComponent("server.pem"), atomically: true, encoding: .utf8)
            try server.privateKeyPEM.write(to: directory.appendingPathComponent("server.key"), atomically: true, encoding: .utf8)
            let port = try await freePort(), upstream = try await freePort()
            let d = directory.path
            let configuration = """
                daemon off; master_process off; worker_processes 1;
                pid \(d)/nginx.pid; error_log stderr notice;
                events { worker_connections 256; }
                http {
                  client_body_temp_path \(d)/body; proxy_temp_path \(d)/proxy; fastcgi_temp_path \(d)/fastcgi;
                  uwsgi_temp_path \(d)/uwsgi; scgi_temp_path \(d)/scgi;
                  log_format requests escape=json '{"uri":"$request_uri","apns_id":"$http_apns_id","topic":"$http_apns_topic","push_type":"$http_apns_push_type","authorization":"$http_authorization","body":"$request_body"}';
                  server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(d)/server.pem; ssl_certificate_key \(d)/server.key; ssl_protocols TLSv1.2 TLSv1.3;
                    http2_max_concurrent_streams 8;
                    http2_body_preread_size 1k;
                    location /3/device/ {
                      client_body_in_single_buffer on; client_body_buffer_size 16k;
                      access_log \(d)/requests.log requests;
                      proxy_pass http://127.0.0.1:\(upstream);
                    }
                  }
                  server {
                    listen 127.0.0.1:\(upstream); access_log off;
                    location ~ bad0$ { default_type application/json; return 400 '{"reason":"BadDeviceToken"}'; }
                    location / { add_header apns-id $http_apns_id always; return 200; }
                  }
                }
                """
            let configurationFile = directory.appendingPathComponent("nginx.conf")
            try configuration.write(to: configurationFile, atomically: true, encoding: .utf8)
            let process = try ChildProcess(nginx, ["-p", d, "-c", configurationFile.path], standardOutput: .discard)
            let sink = Sink(directory: directory, port: port, caPEM: authority.certificatePEM, process: process)
            // Ready when it says so: nginx logs its OS status (ending with getrlimit) after its sockets listen and
            // before it serves, so the line is a real signal, not a guess at how long starting takes.
            if await process.standardError.wait(until: { $0.contains("getrlimit(RLIMIT_NOFILE)") }) != nil { return sink }
            await sink.stop()
            throw NginxFailed(description: "nginx did not start: \(process.standardError.text)")
        }

        struct NginxFailed: Error, CustomStringConvertible { let description: String }

        /// The requests nginx logged, one JSON object each.
        func requests() throws -> [[String: String]] {
            let text = try String(contentsOf: directory.appendingPathComponent("requests.log"), encoding: .utf8)
            return try text.split(separator: "\n").map { line in
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: String]
            }
        }

        /// Kills nginx and removes its folder, for a synchronous `defer`: the kill is reaped in the background.
        func stopWithoutWaiting() {
            process.signal(SIGKILL)
            try? FileManager.default.removeItem(at: directory)
        }

        func stop() async {
            process.signal(SIGKILL)
            _ = await process.exit()
            try? FileManager.default.removeItem(at: directory)
        }

        /// A port the kernel just handed out and that is free again (nginx binds it a moment later).
        private static func freePort() async throws -> Int {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
            let port = try #require(channel.localAddress?.port)
            try await channel.close()
            return port
        }
    }

    @Test("every notification reaches nginx whole, once, through small windows and a limit of 8 streams; rejections keep their reason")
    func notificationsArriveWhole() async throws {
        let sink = try await Sink.start()
        defer { sink.stopWithoutWaiting() }
        let clock = ManualWallClock(Date())
        let tokens = ProviderTokenCache(key: TestSigningKeys.make(keyID: "ABC123DEFG", teamID: "DEF123GHIJ"), clock: clock)
        let configuration = APNSClientConfiguration(
            destination: .custom(host: "127.0.0.1", port: sink.port, environment: .development),
            credentials: .token(tokens), trust: .only(certificatesPEM: sink.caPEM), maximumConnections: 3)
        // Bodies from 30 bytes to 3 KB: the larger ones need several WINDOW_UPDATEs from nginx to get through.
        let count = 600
        let items = (0..<count).map { index -> (PreparedNotification, DeviceToken) in
            let text = String(repeating: "é", count: (index * 37) % 1500)
            let notification = try! PushNotification(Payload(aps: APS(alert: .body("n\(index) " + text))), topic: "com.example.app").prepare()
            let hex = String(format: "%060x", index) + (index % 100 == 7 ? "bad0" : "0000")
            return (notification, try! DeviceToken(hex: hex))
        }
        let deliveries = Mutex<[String: APNSDelivery]>([:])
        try await APNSClient.withClient(configuration: configuration) { client in
            try await client.sendAll(items, maximumInFlight: 64) { delivery in
                deliveries.withLock { $0[delivery.token.hex] = delivery }
            }
        }
        let byToken = deliveries.withLock { $0 }
        #expect(byToken.count == count)
        let rejected = byToken.values.filter { !$0.outcome.isAccepted }
        #expect(rejected.count == count / 100)
        #expect(rejected.allSatisfy { $0.outcome.rejection?.reason == .badDeviceToken && $0.token.hex.hasSuffix("bad0") })

        let logged = try sink.requests()
        #expect(logged.count == count, "each notification reached nginx once")
        let expected = Dictionary(uniqueKeysWithValues: items.map { ("/3/device/" + $1.hex, String(decoding: $0.body, as: UTF8.self)) })
        for request in logged {
            let uri = try #require(request["uri"])
            #expect(request["body"] == expected[uri], "the body of \(uri) arrived whole")
            #expect(request["topic"] == "com.example.app" && request["push_type"] == "alert")
            #expect(request["authorization"]?.hasPrefix("bearer ") == true)
            let token = String(uri.dropFirst("/3/device/".count))
            #expect(request["apns_id"] == byToken[token]?.apnsID)
        }
    }
}
