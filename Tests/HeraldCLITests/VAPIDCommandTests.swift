import ArgumentParser
import Foundation
@testable import HeraldCLI
import HeraldCore
import Testing

/// `herald vapid generate`.
@Suite("herald vapid")
struct VAPIDCommandTests {
    @Test("generate prints a key pair whose private half reads back to its public half, in words or as JSON")
    func generate() throws {
        let key = VAPIDKey.generate()
        let json = try JSONValue(parsing: Array(VAPIDCommand.Generate.text(for: key, json: true).utf8))
        let privateText = try #require(json["privateKey"]?.stringValue)
        #expect(json["publicKey"]?.stringValue == key.publicKeyText)
        #expect(try VAPIDKey(text: privateText).publicKeyText == key.publicKeyText)
        #expect(Base64URL.decode(key.publicKeyText)?.count == 65 && Base64URL.decode(privateText)?.count == 32)
        let words = VAPIDCommand.Generate.text(for: key, json: false)
        #expect(words.contains(key.publicKeyText) && words.contains(privateText))
        #expect(VAPIDKey.generate().publicKeyText != key.publicKeyText, "a new pair each time")
        _ = try Herald.parseAsRoot(["vapid", "generate", "--json"])
    }
}
