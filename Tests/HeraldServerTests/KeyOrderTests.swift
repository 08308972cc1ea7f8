import HTTPTypes
import HeraldCore
import HeraldStore
import Testing

@testable import HeraldServer

/// JSON answers have a stable key order: every object's members sorted by name, whatever the dictionary's order.
@Suite("Server: stable JSON key order", .timeLimit(.minutes(1)))
struct KeyOrderTests {
    /// The member names of every object in JSON text, in the order written.
    static func keyLists(_ text: String) -> [[String]] {
        var lists: [[String]] = []
        var stack: [(isObject: Bool, keys: [String])] = []
        var characters = Array(text.unicodeScalars)[...]
        var lastString: String?
        while let character = characters.popFirst() {
            switch character {
            case "{": stack.append((true, []))
            case "[": stack.append((false, []))
            case "}", "]":
                if let top = stack.popLast(), top.isObject { lists.append(top.keys) }
            case "\"":
                var string = ""
                while let next = characters.popFirst(), next != "\"" {
                    if next == "\\", let escaped = characters.popFirst() {
                        string.unicodeScalars.append(escaped)
                    } else {
                        string.unicodeScalars.append(next)
                    }
                }
                lastString = string
                continue
            case ":":
                if let key = lastString, !stack.isEmpty, stack[stack.count - 1].isObject {
                    stack[stack.count - 1].keys.append(key)
                }
            default: break
            }
            lastString = nil
        }
        return lists
    }

    @Test("registration, send, status, device and error answers write every object's keys in sorted order")
    func sortedKeys() async throws {
        try await ServerHarness.withServer { client, app in
            let key = try await app.store.createAPIKey(name: "order", scopes: [.send, .admin]).secret.value
            let token = testToken(0x61)
            let registered = try await client.register(
                token, debug: true,
                extra:
                    #", "userId": "u", "tags": ["t"], "appVersion": "1", "platform": "iOS", "preferredLanguages": ["en"]"#
            )
            let sent = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "u"}, "alert": "x"}"#, bearer: key)
            let id = try #require(sent.json["id"]?.stringValue)
            let answers = [
                registered,
                sent,
                try await client.call(.get, "/api/sends/\(id)", bearer: key),
                try await client.call(.get, "/api/devices?user=u", bearer: key),
                try await client.call(.get, "/api/devices/\(token.hex)", bearer: key),
                try await client.call(.post, "/api/token", body: "{}"),
                try await client.call(.get, "/ready"),
            ]
            for answer in answers {
                let lists = Self.keyLists(answer.body)
                #expect(!lists.isEmpty, "\(answer)")
                for keys in lists { #expect(keys == keys.sorted(), "\(keys) in \(answer)") }
            }
        }
    }
}
