import HTTPTypes
import HeraldCore
import Testing

@testable import HeraldServer

/// A known path with a method it does not take is `405` with `Allow`, not `404`.
@Suite("Server: wrong methods", .timeLimit(.minutes(1)))
struct MethodNotAllowedTests {
    @Test("a wrong method on a known path is 405 methodNotAllowed with Allow and the JSON error body")
    func wrongMethod() async throws {
        let token = String(repeating: "ab", count: 32)
        try await ServerHarness.withServer { client, _ in
            for (method, path, allowed) in [
                (HTTPRequest.Method.get, "/api/token", "POST"),
                (.put, "/api/token/\(token)", "DELETE"),
                (.get, "/api/send", "POST"),
                (.post, "/api/sends/2f1c6a4e-8d0b-4c55-9a37-1f3e5b7d9c01", "DELETE, GET"),
                (.delete, "/api/devices", "GET"),
                (.post, "/health", "GET"),
            ] {
                let answer = try await client.call(method, path)
                #expect(answer.status == .methodNotAllowed, "\(method) \(path): \(answer)")
                #expect(answer.reason == "methodNotAllowed", "\(method) \(path): \(answer)")
                #expect(answer.headers[.allow] == allowed, "\(method) \(path): \(answer.headers)")
                #expect(answer.json["error"]?.stringValue?.contains(allowed) == true, "\(answer)")
            }
            let unknown = try await client.call(.get, "/api/nothing")
            #expect(unknown.status == .notFound && unknown.reason == "notFound" && unknown.headers[.allow] == nil)
            let tooDeep = try await client.call(.delete, "/api/token/\(token)/more")
            #expect(tooDeep.status == .notFound, "\(tooDeep)")
        }
    }
}
