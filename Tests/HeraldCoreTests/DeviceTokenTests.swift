import Foundation
import HeraldCore
import Testing

@Suite("Device tokens")
struct DeviceTokenTests {
    static let token32 = String(repeating: "0123456789abcdef", count: 4)
    static let token100 = String(repeating: "a1b2c3d4e5", count: 20)

    @Test("valid tokens parse to canonical lowercase hex", arguments: [
        (token32, token32, 32),
        (token100, token100, 100),
        (token32.uppercased(), token32, 32),
        ("<" + token32 + ">", token32, 32),
        ("<01234567 89abcdef 01234567 89ABCDEF 01234567 89abcdef 01234567 89abcdef>", token32, 32),
        ("  " + token32 + "\n", token32, 32),
    ])
    func parses(input: String, canonical: String, bytes: Int) throws {
        let token = try DeviceToken(hex: input)
        #expect(token.hex == canonical)
        #expect(token.byteCount == bytes)
        let pairs = stride(from: 0, to: canonical.count, by: 2).map {
            UInt8(canonical.dropFirst($0).prefix(2), radix: 16)!
        }
        #expect(token.bytes == pairs)
    }

    @Test("invalid tokens are rejected with a message a person can act on", arguments: [
        ("", DeviceTokenError.Code.empty, "empty"),
        ("   ", .empty, "empty"),
        ("<>", .empty, "empty"),
        ("abc", .oddLength(3), "odd number"),
        (String(token32.dropLast()), .oddLength(63), "odd number"),
        (token32 + "zz", .invalidCharacter("z", offset: 64), "not a hex digit"),
        ("0123456789abcdeg0123456789abcdef", .invalidCharacter("g", offset: 15), "not a hex digit"),
        ("01234567é9abcdef0123456789abcdef", .invalidCharacter("é", offset: 8), "not a hex digit"),
        ("<" + token32, .unbalancedBracket, "no closing"),
        ("abcd", .tooShort(2), "at least"),
        (String(repeating: "ab", count: 513), .tooLong(513), "more than"),
    ])
    func rejects(input: String, code: DeviceTokenError.Code, phrase: String) {
        #expect {
            try DeviceToken(hex: input)
        } throws: { error in
            guard let error = error as? DeviceTokenError else { return false }
            return error.code == code && error.description.contains(phrase)
        }
    }

    @Test("substrings parse like strings")
    func substrings() throws {
        let line = "token=" + Self.token32.uppercased() + "!"
        let hex = line.dropFirst("token=".count)
        #expect(try DeviceToken(hex: hex.dropLast()).hex == Self.token32)
        #expect {
            try DeviceToken(hex: hex)
        } throws: { error in
            (error as? DeviceTokenError)?.code == .invalidCharacter("!", offset: 64)
        }
    }

    @Test("data round trip and Data.description-style input")
    func dataRoundTrip() throws {
        let bytes = (0..<100).map { UInt8($0 * 7 % 256) }
        let token = try DeviceToken(data: bytes)
        #expect(token.data == Data(bytes))
        #expect(try DeviceToken(hex: token.hex) == token)
        #expect(token.byteCount == 100)
        #expect(throws: DeviceTokenError.self) { try DeviceToken(data: [UInt8]()) }
    }

    @Test("descriptions never show the whole token")
    func redaction() throws {
        let token = try DeviceToken(hex: Self.token32)
        #expect("\(token)" == "…89abcdef")
        #expect(!"\(token)".contains(Self.token32))
    }

    @Test("environments name their hosts and ports")
    func environments() {
        #expect(APNSEnvironment.production.host == "api.push.apple.com")
        #expect(APNSEnvironment.development.host == "api.sandbox.push.apple.com")
        #expect(APNSEnvironment.port == 443 && APNSEnvironment.alternatePort == 2197)
        #expect(APNSEnvironment.development.channelManagementPort == 2195)
        #expect(APNSEnvironment.production.channelManagementPort == 2196)
        #expect(APNSEnvironment(name: "sandbox") == .development)
        #expect(APNSEnvironment(name: "Production") == .production)
        #expect(APNSEnvironment(name: "staging") == nil)
        #expect(APNSEnvironment.development.other == .production)
        #expect(APNSEnvironment.development.sendsUniqueID && !APNSEnvironment.production.sendsUniqueID)
    }
}
