import Foundation
import HeraldCore
import Testing

/// Every `reason` the server's code can answer is in docs/openapi.yaml's `x-herald-reasons`, and every reason listed
/// there is one the code gives (issue 43, item 4): a reason added, renamed or dropped in the code without the document
/// fails here. Read from the sources, as a reviewer would: the literal reasons of `APIError`s and the codes of the
/// engine's and the validator's errors, which become reasons as they are.
@Suite("Server: the error reasons of the code and the document agree")
struct ErrorReasonDocumentTests {
    /// The console's own answers: HTML pages, not the API's JSON, so not in the API's document.
    static let consoleOnly: Set<String> = ["consoleRoleTooLow", "consoleSignInRequired", "noEmulator"]

    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized

    /// `reason: "x"` in the server's sources (not `LogKey.reason: "x"`, a log's metadata), and `Self("x")` in the files
    /// of error codes that become reasons.
    static func reasonsInCode() throws -> Set<String> {
        var reasons = Set<String>()
        let server = repository.appendingPathComponent("Sources/HeraldServer")
        let files = FileManager.default.enumerator(at: server, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        let literal = try Regex(#"(.)reason: "([A-Za-z]+)""#)
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: literal) where match.output[1].substring != "." {
                reasons.insert(String(match.output[2].substring ?? ""))
            }
        }
        let code = try Regex(#"static let [A-Za-z]+ = Self\("([A-Za-z]+)"\)"#)
        for path in ["Sources/HeraldSending/Engine/SendError.swift", "Sources/HeraldCore/Validation/NotificationValidationError.swift"] {
            let text = try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
            for match in text.matches(of: code) { reasons.insert(String(match.output[1].substring ?? "")) }
        }
        return reasons
    }

    @Test("x-herald-reasons is exactly the reasons the code gives, the console's pages aside")
    func agree() async throws {
        let document = try await OpenAPIConformanceTests.document()
        let listed = try #require(
            document["components"]?["schemas"]?["Error"]?["properties"]?["reason"]?["x-herald-reasons"]?.arrayValue)
        let documented = Set(listed.compactMap(\.stringValue))
        #expect(documented.count == listed.count, "each reason once")
        let code = try Self.reasonsInCode().subtracting(Self.consoleOnly)
        #expect(code.count > 40, "the scan found the reasons: \(code.sorted())")
        #expect(code.subtracting(documented).isEmpty, "answered but not documented: \(code.subtracting(documented).sorted())")
        #expect(documented.subtracting(code).isEmpty, "documented but never answered: \(documented.subtracting(code).sorted())")
    }
}
