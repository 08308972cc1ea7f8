import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The emulator seen by clients that share no code with Herald: curl, a Python-made JWT, plain HTTP for admin.
@Suite("Emulator: outside clients", .timeLimit(.minutes(2)))
struct OutsideClientTests {
    let temporary: TemporaryDirectory
    var directory: URL { temporary.url }
    let keyFile: URL
    let key: ProviderSigningKey

    init() throws {
        temporary = try TemporaryDirectory(prefix: "herald-emulator")
        let (pem, _) = TestSigningKeys.makePEM()
        keyFile = temporary.appending("AuthKey_CURLKEY001.p8")
        try pem.write(to: keyFile, atomically: true, encoding: .utf8)
        key = try ProviderSigningKey(pem: pem, keyID: "CURLKEY001", teamID: "CURLTEAM01")
    }

    func pythonJWT() async throws -> String {
        let result = try await ProcessRunner.run("python3", [
            ProcessRunner.jwtScript(relativeTo: #filePath).path, "sign", keyFile.path, "CURLKEY001", "CURLTEAM01",
            String(Int(Date().timeIntervalSince1970)),
        ])
        try #require(result.status == 0, "python3 failed: \(result.standardError)")
        return result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs curl and returns the status line's code, the headers and the body.
    func curl(_ arguments: [String]) async throws -> (status: Int, headers: [String: String], body: String, exit: Int32) {
        let headerFile = directory.appendingPathComponent("headers-\(UUID()).txt")
        let result = try await ProcessRunner.run("curl", ["-s", "-D", headerFile.path] + arguments)
        let text = (try? String(contentsOf: headerFile, encoding: .utf8)) ?? ""
        var status = 0
        var headers = [String: String]()
        for line in text.split(separator: "\r\n") {
            if line.hasPrefix("HTTP/") { status = Int(line.split(separator: " ")[1]) ?? 0; continue }
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return (status, headers, result.standardOutput, result.status)
    }

    @Test("curl --http2 with a Python-made JWT sends a push that lands in the inbox; invalid ones get their reasons")
    func curlHTTP2() async throws {
        let configuration = EmulatorConfiguration(
            adminPort: nil, tls: .generated(caFile: directory.appendingPathComponent("ca.pem")), trustedKeys: [.init(key)])
        try await APNSEmulator.withRunning(configuration) { emulator in
            let jwt = try await pythonJWT()
            let token = String(repeating: "5e", count: 32)
            let url = "https://localhost:\(emulator.port(for: .development)!)/3/device/"
            let common = ["--http2", "--cacert", directory.appendingPathComponent("ca.pem").path, "-H", "authorization: bearer \(jwt)"]
            let ok = try await curl(common + ["-H", "apns-topic: com.example.app", "-H", "apns-push-type: alert", "-d", #"{"aps":{"alert":"Hello from curl"}}"#, url + token])
            #expect(ok.status == 200)
            let apnsID = try #require(ok.headers["apns-id"])
            let inbox = try emulator.inbox(for: DeviceToken(hex: token))
            #expect(inbox.count == 1 && inbox[0].apnsID == apnsID && inbox[0].payloadString == #"{"aps":{"alert":"Hello from curl"}}"#)

            let invalid: [([String], Int, String)] = [
                (["-H", "apns-topic: com.example.app", "-d", "", url + token], 400, "PayloadEmpty"),
                (["-H", "apns-topic: com.example.app", "-H", "apns-priority: 10", "-H", "apns-push-type: background", "-d", #"{"aps":{"content-available":1}}"#, url + token], 400, "BadPriority"),
                (["-d", #"{"aps":{"alert":"x"}}"#, url + token], 400, "MissingTopic"),
                (["-H", "apns-topic: com.example.app", "-d", #"{"aps":{"alert":"x"}}"#, url + "xyz"], 400, "BadDeviceToken"),
                (["-H", "apns-topic: com.example.app", "-X", "GET", url + token], 405, "MethodNotAllowed"),
            ]
            for (arguments, status, reason) in invalid {
                let response = try await curl(common + arguments)
                #expect(response.status == status, "\(reason)")
                #expect(response.body == #"{"reason":"\#(reason)"}"#)
            }
            let noToken = try await curl(["--http2", "--cacert", directory.appendingPathComponent("ca.pem").path, "-H", "apns-topic: com.example.app", "-d", "{}", url + token])
            #expect(noToken.status == 403 && noToken.body.contains("MissingProviderToken"))
        }
    }

    @Test("h2load (nghttp2) pushes 3,000 notifications over 3 connections × 50 streams, HPACK-indexed and Huffman-coded: all accepted",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/h2load") || ProcessInfo.processInfo.environment["CI"] != nil))
    func h2load() async throws {
        let configuration = EmulatorConfiguration(
            adminPort: nil, tls: .generated(caFile: directory.appendingPathComponent("ca.pem")), trustedKeys: [.init(key)],
            inbox: .countingOnly)
        try await APNSEmulator.withRunning(configuration) { emulator in
            let jwt = try await pythonJWT()
            let body = directory.appendingPathComponent("payload.json")
            try #"{"aps":{"alert":{"title":"h2load","body":"from nghttp2"}}}"#.write(to: body, atomically: true, encoding: .utf8)
            let result = try await ProcessRunner.run("h2load", [
                "-n", "3000", "-c", "3", "-m", "50", "-t", "1", "-d", body.path,
                "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: com.example.app", "-H", "apns-push-type: alert",
                "https://127.0.0.1:\(emulator.port(for: .development)!)/3/device/" + String(repeating: "7c", count: 32),
            ])
            #expect(result.status == 0, "h2load failed: \(result.standardError)")
            #expect(result.standardOutput.contains("status codes: 3000 2xx, 0 3xx, 0 4xx, 0 5xx"), "\(result.standardOutput)")
            #expect(emulator.counters.accepted == 3000 && emulator.counters.duplicateAPNSIDs == 0)
        }
    }

    @Test("curl --http1.1 is refused")
    func curlHTTP1() async throws {
        let configuration = EmulatorConfiguration(adminPort: nil, tls: .generated(caFile: directory.appendingPathComponent("ca.pem")), trustedKeys: [.init(key)])
        try await APNSEmulator.withRunning(configuration) { emulator in
            let response = try await curl(["--http1.1", "--cacert", directory.appendingPathComponent("ca.pem").path, "-d", "{}",
                                     "https://localhost:\(emulator.port(for: .development)!)/3/device/" + String(repeating: "5e", count: 32)])
            #expect(response.exit != 0)
            #expect(response.status == 0, "no HTTP/1.1 response at all")
            #expect(emulator.counters.accepted == 0)
        }
    }

    @Test("the admin API creates devices, marks them unregistered, reads inboxes and counters, changes faults")
    func adminAPI() async throws {
        let configuration = EmulatorConfiguration(adminPort: 0, trustedKeys: [.init(key)], deviceMode: .strict)
        try await APNSEmulator.withRunning(configuration) { emulator in
            let base = "http://127.0.0.1:\(emulator.adminPort!)"
            func call(_ method: String, _ path: String, _ body: String? = nil) async throws -> (Int, Any?) {
                var request = URLRequest(url: URL(string: base + path)!)
                request.httpMethod = method
                request.httpBody = body.map { Data($0.utf8) }
                let (data, response) = try await URLSession.shared.data(for: request)
                return ((response as! HTTPURLResponse).statusCode, data.isEmpty ? nil : try JSONSerialization.jsonObject(with: data))
            }
            let (created, device) = try await call("POST", "/devices", #"{"environment":"production","topic":"com.example.app","bytes":100}"#)
            #expect(created == 201)
            let token = try #require((device as? [String: Any])?["token"] as? String)
            #expect(token.count == 200)
            #expect(emulator.device(try DeviceToken(hex: token))?.environment == .production)

            let client = try await HTTP2TestClient.connect(port: emulator.port(for: .production)!, trustRootPEM: emulator.certificateAuthorityPEM!)
            let bearer = key.signToken(issuedAt: Date()).authorizationHeader
            let push = try await client.send(path: "/3/device/" + token, headers: [("authorization", bearer), ("apns-topic", "com.example.app")], body: Array(#"{"aps":{"badge":3}}"#.utf8))
            #expect(push.status == 200)
            let (_, inbox) = try await call("GET", "/devices/\(token)/inbox")
            let entries = try #require(inbox as? [[String: Any]])
            #expect(entries.count == 1 && (entries[0]["payload"] as? [String: Any])?["aps"] as? [String: Int] == ["badge": 3])
            // Answers keep one documented key order (names sorted, nested objects too), not the dictionary's.
            let (raw, _) = try await URLSession.shared.data(from: URL(string: base + "/devices/\(token)/inbox")!)
            let text = Array(raw.dropLast())
            #expect(try JSONValue(parsing: text).sortedJSONBytes == text, "\(String(decoding: text, as: UTF8.self))")

            let (unregistered, _) = try await call("POST", "/devices/\(token)/unregister", #"{"timestamp":1767225600000}"#)
            #expect(unregistered == 200)
            let gone = try await client.send(path: "/3/device/" + token, headers: [("authorization", bearer), ("apns-topic", "com.example.app")], body: Array(#"{"aps":{"badge":4}}"#.utf8))
            #expect(gone.status == 410 && gone.json?["timestamp"] as? Int == 1_767_225_600_000)

            let (_, counters) = try await call("GET", "/counters")
            #expect((counters as? [String: Any])?["accepted"] as? Int == 1)
            #expect(((counters as? [String: Any])?["rejected"] as? [String: Int])?["Unregistered"] == 1)

            // A partial object changes only the fields it names.
            let (latencyStatus, _) = try await call("PUT", "/faults", #"{"latency":{"fixed":{"milliseconds":5}}}"#)
            #expect(latencyStatus == 200)
            let (faultStatus, _) = try await call("PUT", "/faults", #"{"internalServerError":1}"#)
            #expect(faultStatus == 200)
            #expect(emulator.faults.internalServerError == 1 && emulator.faults.latency == .fixed(milliseconds: 5))
            let (refuseStatus, _) = try await call("PUT", "/faults", #"{"refusedStreamProbability":0.5}"#)
            #expect(refuseStatus == 200 && emulator.faults.refusedStreamProbability == 0.5)
            _ = try await call("PUT", "/faults", #"{"refusedStreamProbability":0}"#)
            let (badFaults, error) = try await call("PUT", "/faults", #"{"internalServerError":2}"#)
            #expect(badFaults == 400 && (error as? [String: String])?["error"] != nil)
            // Bad input is explained in words, not as a Swift DecodingError, and changes nothing.
            for (body, words) in [(#"{"tooManyRequests":"lots"}"#, #""tooManyRequests" must be a number"#),
                                  (#"{"tooManyRequest":0.5}"#, #"Unknown fault field "tooManyRequest""#),
                                  ("[1]", "a JSON object")] {
                let (status, answer) = try await call("PUT", "/faults", body)
                let message = (answer as? [String: String])?["error"] ?? ""
                #expect(status == 400 && message.contains(words) && !message.contains("DecodingError") && !message.contains("CodingKeys"), "\(message)")
            }
            #expect(emulator.faults.internalServerError == 1 && emulator.faults.tooManyRequests == 0)
            let (cleared, _) = try await call("DELETE", "/devices/\(token)/inbox")
            #expect(cleared == 204)
            let (removed, _) = try await call("DELETE", "/devices/\(token)")
            #expect(removed == 204)
            let (missing, _) = try await call("GET", "/devices/\(token)")
            #expect(missing == 404)
            let (unknownRoute, _) = try await call("GET", "/nothing")
            #expect(unknownRoute == 404)
            await client.close()
        }
    }

    @Test("herald emulator runs as its own process, prints where it listens, and stops on SIGTERM")
    func commandLine() async throws {
        let token = String(repeating: "9c", count: 32)
        let emulator = try await HeraldEmulatorProcess(arguments: HeraldEmulatorProcess.freePorts + [
            "--ca-file", directory.appendingPathComponent("ca.pem").path, "--strict", "--device", "development:com.example.app:\(token)",
        ])
        let line = emulator.headline
        #expect(line.contains("trust \(directory.appendingPathComponent("ca.pem").path)") && line.contains("EMULATOR01") && line.contains("strict"))
        let developmentPort = try #require(emulator.port("development"))

        let generated = directory.appendingPathComponent("AuthKey_EMULATOR01.p8")
        let key = try ProviderSigningKey(contentsOf: generated, teamID: "EMULATORTM")
        let ca = try String(contentsOf: directory.appendingPathComponent("ca.pem"), encoding: .utf8)
        let client = try await HTTP2TestClient.connect(port: developmentPort, trustRootPEM: ca)
        let response = try await client.send(path: "/3/device/" + token, headers: [("authorization", key.signToken(issuedAt: Date()).authorizationHeader), ("apns-topic", "com.example.app")], body: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        #expect(response.status == 200)
        await client.close()
        #expect(await emulator.stop() == 0, "SIGTERM is a graceful shutdown")
    }
}
