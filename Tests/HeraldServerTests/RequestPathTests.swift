import Foundation
import Logging
import Synchronization
import Testing

@testable import HeraldServer

/// Pieces of every request's path: the bearer secret's parsing and the text log lines.
@Suite("Server: bearer secrets and text log lines", .timeLimit(.minutes(1)))
struct RequestPathTests {
    @Test("The secret of a Bearer header, the scheme in any case, blanks around it trimmed")
    func bearerSecrets() {
        #expect(APIKeyAuthenticator.bearerSecret("Bearer abc") == "abc")
        #expect(APIKeyAuthenticator.bearerSecret("bearer abc") == "abc")
        #expect(APIKeyAuthenticator.bearerSecret("BEARER   abc \t ") == "abc")
        #expect(APIKeyAuthenticator.bearerSecret("  Bearer\tabc") == "abc")
        #expect(APIKeyAuthenticator.bearerSecret("Bearer a b") == "a b")
        #expect(APIKeyAuthenticator.bearerSecret("Bearer") == nil)
        #expect(APIKeyAuthenticator.bearerSecret("Bearer   ") == nil)
        #expect(APIKeyAuthenticator.bearerSecret("Basic abc") == nil)
        #expect(APIKeyAuthenticator.bearerSecret("Bearerabc") == nil)
        #expect(APIKeyAuthenticator.bearerSecret("Bearers abc") == nil)
        #expect(APIKeyAuthenticator.bearerSecret("") == nil)
    }

    @Test("A text line: time, level, label, the metadata sorted by key (the event's win), source, message")
    func textLine() {
        let lines = Mutex<[String]>([])
        let noon = Date(timeIntervalSince1970: 1_795_000_000)
        var handler = TextLogHandler(
            label: "herald", metadataProvider: nil, output: { line in lines.withLock { $0.append(line) } },
            now: { noon })
        handler[metadataKey: "zeta"] = "last"
        handler[metadataKey: "alpha"] = "first"
        handler[metadataKey: "send.id"] = "old"
        var logger = Logger(label: "herald") { _ in handler }
        logger.logLevel = .info
        logger.info("Sent", metadata: ["send.id": "new", "count": "3"])
        logger.debug("Not written")
        let written = lines.withLock { $0 }
        #expect(written.count == 1)
        let stamp = TextLogHandler.timestamp(noon)
        #expect(
            written.first == "\(stamp) info herald: alpha=first count=3 send.id=new zeta=last [HeraldServerTests] Sent")
        #expect(stamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}/) != nil)
    }

    @Test("A line without metadata has none, and an error is written as its message and type")
    func textLineError() {
        struct Broken: Error, CustomStringConvertible { var description: String { "it broke" } }
        let lines = Mutex<[String]>([])
        let handler = TextLogHandler(
            label: "", metadataProvider: nil, output: { line in lines.withLock { $0.append(line) } })
        let logger = Logger(label: "") { _ in handler }
        logger.warning("Plain")
        logger.error("Failed", error: Broken())
        let written = lines.withLock { $0 }
        #expect(written.count == 2)
        #expect(written.first?.hasSuffix(" warning: [HeraldServerTests] Plain") == true)
        #expect(written.last?.contains(" error: error.message=it broke error.type=") == true)
        #expect(written.last?.hasSuffix("Broken [HeraldServerTests] Failed") == true)
    }
}
