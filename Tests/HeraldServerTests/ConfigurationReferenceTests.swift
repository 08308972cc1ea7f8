import Foundation
import Testing

/// docs/operations.md's table of every `HERALD_*` variable is the one reference: it lists exactly what the code reads.
@Suite("Server: the configuration reference")
struct ConfigurationReferenceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every `HERALD_…` name in a text.
    static func names(in text: String) -> Set<String> {
        Set(text.matches(of: /HERALD_[A-Z0-9_]*[A-Z0-9]/).map { String($0.output) })
    }

    @Test("docs/operations.md lists every HERALD_* variable the sources read, and no other")
    func everyVariable() throws {
        var read = Set<String>()
        let sources = Self.root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            // The names the code reads are string literals: "HERALD_…".
            for match in text.matches(of: /"(HERALD_[A-Z0-9_]+)"/) { read.insert(String(match.output.1)) }
        }
        let document = try String(
            contentsOf: Self.root.appendingPathComponent("docs/operations.md"), encoding: .utf8)
        let section = try #require(
            document.components(separatedBy: "## Every HERALD_* variable").last?.components(separatedBy: "\n## ").first)
        let rows = section.split(separator: "\n").filter { $0.hasPrefix("| `HERALD_") }.joined(separator: "\n")
        let documented = Self.names(in: rows)
        #expect(read.count > 30, "the sources were found: \(read.count) names")
        #expect(read.subtracting(documented).isEmpty, "read but not in docs/operations.md: \(read.subtracting(documented).sorted())")
        #expect(documented.subtracting(read).isEmpty, "documented but never read: \(documented.subtracting(read).sorted())")
    }
}
