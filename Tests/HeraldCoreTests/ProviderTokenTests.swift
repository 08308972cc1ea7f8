import Crypto
import Foundation
import HeraldCore
import HeraldTesting
import Testing

@Suite("Provider tokens (ES256 JWT)")
struct ProviderTokenTests {
    let key: ProviderSigningKey

    @Test("a signed token has the header, claims and signature APNs expects")
    func format() throws {
        let token = key.signToken(issuedAt: Date(timeIntervalSince1970: 1_767_225_600.7))
        let parts = token.jwt.split(separator: ".")
        #expect(parts.count == 3)
        #expect(!token.jwt.contains("=") && !token.jwt.contains("+") && !token.jwt.contains("/"))
        let header = try JSONValue(parsing: try #require(Base64URL.decode(parts[0])))
        let claims = try JSONValue(parsing: try #require(Base64URL.decode(parts[1])))
        #expect(header == ["alg": "ES256", "kid": "ABC123DEFG"])
        #expect(claims == ["iss": "DEF123GHIJ", "iat": 1_767_225_600])
        #expect(try #require(Base64URL.decode(parts[2])).count == 64)
        #expect(token.authorizationHeader == "bearer " + token.jwt)
        #expect(!"\(token)".contains(token.jwt))
        #expect(!"\(key)".contains("PRIVATE") && !String(reflecting: key).contains(key.publicKeyPEM))
    }

    @Test("keys load from .p8 files, taking the key id from Apple's file name")
    func loading() throws {
        let (pem, _) = TestSigningKeys.makePEM()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("AuthKey_ABC123DEFG.p8")
        try pem.write(to: file, atomically: true, encoding: .utf8)
        let loaded = try ProviderSigningKey(contentsOf: file, teamID: "DEF123GHIJ")
        #expect(loaded.keyID == "ABC123DEFG")

        let other = directory.appendingPathComponent("key.p8")
        try pem.write(to: other, atomically: true, encoding: .utf8)
        #expect(throws: ProviderKeyError.self) { try ProviderSigningKey(contentsOf: other, teamID: "DEF123GHIJ") }
        #expect(throws: ProviderKeyError.self) { try ProviderSigningKey(contentsOf: directory.appendingPathComponent("missing.p8"), keyID: "ABC123DEFG", teamID: "DEF123GHIJ") }
        #expect(throws: ProviderKeyError.self) { try ProviderSigningKey(pem: "not a key", keyID: "ABC123DEFG", teamID: "DEF123GHIJ") }
        #expect(throws: ProviderKeyError.self) { try ProviderSigningKey(pem: pem, keyID: "short", teamID: "DEF123GHIJ") }
        #expect(throws: ProviderKeyError.self) { try ProviderSigningKey(pem: pem, keyID: "ABC123DEFG", teamID: "DEF-123GHI") }
        // A P-384 key is not an APNs key.
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        #expect(throws: ProviderKeyError.self) { try ProviderSigningKey(pem: p384, keyID: "ABC123DEFG", teamID: "DEF123GHIJ") }
    }

    // MARK: Verification

    func verifier() -> ProviderTokenVerifier {
        ProviderTokenVerifier(trustedKeys: [.init(key)])
    }

    func forged(header: JSONValue, claims: JSONValue, signWith signer: P256.Signing.PrivateKey? = nil, der: Bool = false) -> String {
        let input = Base64URL.encode(header.jsonBytes) + "." + Base64URL.encode(claims.jsonBytes)
        let signer = signer ?? P256.Signing.PrivateKey()
        let signature = try! signer.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(der ? signature.derRepresentation : signature.rawRepresentation)
    }

    @Test("verification accepts Herald's tokens, DER signatures, string iat and extra fields")
    func verificationAccepts() throws {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let token = key.signToken(issuedAt: now)
        let verified = try verifier().verify(authorization: token.authorizationHeader, now: now.addingTimeInterval(3599))
        #expect(verified.key.keyID == "ABC123DEFG" && verified.issuedAt == now)
        #expect(try verifier().verify(authorization: "Bearer " + token.jwt, now: now).jwt == token.jwt)

        let signer = try #require(privateKey(of: key))
        let derToken = forged(header: ["alg": "ES256", "kid": "ABC123DEFG", "typ": "JWT"],
                              claims: ["iss": "DEF123GHIJ", "iat": "1767225600", "kid": "ABC123DEFG"], signWith: signer, der: true)
        #expect(try verifier().verify(jwt: derToken, now: now).issuedAt == now)
    }

    /// The tests hold the key they generated; reach the private half through a signing round trip instead of API.
    func privateKey(of key: ProviderSigningKey) -> P256.Signing.PrivateKey? { signingKeys[key.keyID] }
    let signingKeys: [String: P256.Signing.PrivateKey]

    init() {
        let (pem, privateKey) = TestSigningKeys.makePEM()
        key = try! ProviderSigningKey(pem: pem, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        signingKeys = ["ABC123DEFG": privateKey]
    }

    @Test("verification rejects each malformed token with APNs' reason", arguments: [
        ("missing header", nil as String?, APNSReason.missingProviderToken),
        ("empty header", "", .missingProviderToken),
        ("basic scheme", "basic abc", .missingProviderToken),
        ("bearer only", "bearer ", .missingProviderToken),
        ("two segments", "bearer a.b", .invalidProviderToken),
        ("garbage", "bearer !!.??.**", .invalidProviderToken),
    ])
    func verificationRejectsHeaders(name: String, authorization: String?, reason: APNSReason) {
        #expect {
            try verifier().verify(authorization: authorization, now: Date())
        } throws: { error in
            (error as? ProviderTokenError)?.reason == reason
        }
    }

    @Test("verification rejects wrong algorithm, key, team, signature and age")
    func verificationRejectsClaims() throws {
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let signer = try #require(privateKey(of: key))
        let iat = JSONValue.integer(1_767_225_600)
        let cases: [(String, APNSReason)] = [
            (forged(header: ["alg": "HS256", "kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": iat], signWith: signer), .invalidProviderToken),
            (forged(header: ["kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": iat], signWith: signer), .invalidProviderToken),
            (forged(header: ["alg": "ES256", "kid": "ZZZ123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": iat], signWith: signer), .invalidProviderToken),
            (forged(header: ["alg": "ES256", "kid": "ABC123DEFG"], claims: ["iss": "OTHERTEAM1", "iat": iat], signWith: signer), .invalidProviderToken),
            (forged(header: ["alg": "ES256", "kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ"], signWith: signer), .invalidProviderToken),
            (forged(header: ["alg": "ES256", "kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": 1.5e9], signWith: signer), .invalidProviderToken),
            (forged(header: ["alg": "ES256", "kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": iat]), .invalidProviderToken),
            (forged(header: ["alg": "ES256", "kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": .integer(1_767_225_600 - 3601)], signWith: signer), .expiredProviderToken),
            (forged(header: ["alg": "ES256", "kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": .integer(1_767_225_600 + 120)], signWith: signer), .invalidProviderToken),
            (forged(header: ["alg": "ES256", "kid": "ABC123DEFG"], claims: ["iss": "DEF123GHIJ", "iat": "1767225600000"], signWith: signer), .invalidProviderToken),
        ]
        for (index, (jwt, reason)) in cases.enumerated() {
            #expect(throws: ProviderTokenError.self, "case \(index)") { try verifier().verify(jwt: jwt, now: now) }
            do {
                _ = try verifier().verify(jwt: jwt, now: now)
            } catch {
                #expect(error.reason == reason, "case \(index): \(error)")
            }
        }
        // A valid signature over altered claims fails.
        let token = key.signToken(issuedAt: now)
        let parts = token.jwt.split(separator: ".")
        let tampered = parts[0] + "." + Base64URL.encode(JSONValue.object(["iss": "DEF123GHIJ", "iat": .integer(1_767_225_601)]).jsonBytes) + "." + parts[2]
        #expect(throws: ProviderTokenError.self) { try verifier().verify(jwt: String(tampered), now: now) }
    }

    // MARK: Cache

    @Test("the cache reuses a token for 50 minutes, then signs a new one")
    func cacheReuse() {
        let clock = ManualWallClock()
        let cache = ProviderTokenCache(key: key, clock: clock)
        let first = cache.currentToken()
        clock.advance(by: .seconds(49 * 60 + 59))
        #expect(cache.currentToken() == first)
        clock.advance(by: .seconds(1))
        let second = cache.currentToken()
        #expect(second != first)
        #expect(second.issuedAt == first.issuedAt.addingTimeInterval(50 * 60))
        #expect(cache.signatureCount == 2)
    }

    @Test("the cache never signs twice within 20 minutes, even when asked to after a rejection")
    func cacheFloor() {
        let clock = ManualWallClock()
        let cache = ProviderTokenCache(key: key, clock: clock)
        let first = cache.currentToken()
        clock.advance(by: .seconds(19 * 60))
        #expect(cache.refreshedToken(replacing: first) == first)
        clock.advance(by: .seconds(60))
        let second = cache.refreshedToken(replacing: first)
        #expect(second != first)
        // A second caller reporting the same stale token gets the new one, not a third signature.
        #expect(cache.refreshedToken(replacing: first) == second)
        #expect(cache.signatureCount == 2)
        // A clock that steps backwards keeps the token.
        clock.advance(by: .seconds(-3600))
        #expect(cache.currentToken() == second)
    }

    @Test("many concurrent callers share one signature")
    func cacheConcurrency() async {
        let cache = ProviderTokenCache(key: key, clock: ManualWallClock())
        let tokens = await withTaskGroup(of: ProviderToken.self) { group in
            for _ in 0..<200 { group.addTask { cache.currentToken() } }
            return await group.reduce(into: Set<ProviderToken>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(cache.signatureCount == 1)
    }

    @Test("an hour of sends never produces two tokens within 20 minutes")
    func cacheOverAnHour() {
        let clock = ManualWallClock()
        let cache = ProviderTokenCache(key: key, clock: clock)
        var issued = [Date]()
        var random = TestSeed.generator(for: "an hour of sends never produces two tokens within 20 minutes")
        for _ in 0..<10_000 {
            let token = cache.currentToken()
            if issued.last != token.issuedAt { issued.append(token.issuedAt) }
            if Int.random(in: 0..<100, using: &random) == 0 { _ = cache.refreshedToken(replacing: token) }
            clock.advance(by: .milliseconds(360))
        }
        for (earlier, later) in zip(issued, issued.dropFirst()) {
            #expect(later.timeIntervalSince(earlier) >= 20 * 60)
        }
        #expect(issued.count >= 2)
    }

    @Test("a token signed elsewhere is adopted when newer")
    func adopt() {
        let clock = ManualWallClock()
        let cache = ProviderTokenCache(key: key, clock: clock)
        let first = cache.currentToken()
        let shared = key.signToken(issuedAt: clock.now().addingTimeInterval(60))
        cache.adopt(shared)
        #expect(cache.currentToken() == shared)
        cache.adopt(first)
        #expect(cache.currentToken() == shared)
    }

    @Test("a newer token under the same key id but signed by another key, or too old to use, is not adopted")
    func adoptChecksTheSignature() {
        let clock = ManualWallClock()
        let cache = ProviderTokenCache(key: key, clock: clock)
        let own = cache.currentToken()
        let impostor = TestSigningKeys.make(keyID: key.keyID, teamID: key.teamID)
        cache.adopt(impostor.signToken(issuedAt: clock.now().addingTimeInterval(30)))
        #expect(cache.currentToken() == own)
        // Newer than the cached token, but past APNs' one-hour limit by now.
        let stale = key.signToken(issuedAt: clock.now().addingTimeInterval(600))
        clock.advance(by: .seconds(2 * 3600))
        cache.adopt(stale)
        #expect(cache.currentToken() != stale)
    }

    // MARK: Interoperability

    @Test("a JWT Herald signs verifies with Python's cryptography")
    func heraldToPython() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let publicFile = directory.appendingPathComponent("public.pem")
        try key.publicKeyPEM.write(to: publicFile, atomically: true, encoding: .utf8)
        let token = key.signToken(issuedAt: Date())
        let output = try await runPython(["verify", publicFile.path, token.jwt])
        let verified = try JSONValue(parsing: output)
        #expect(verified["header"]?["kid"] == "ABC123DEFG")
        #expect(verified["claims"]?["iss"] == "DEF123GHIJ")
    }

    @Test("a JWT Python signs verifies in Herald, with r‖s and with DER signatures", arguments: [false, true])
    func pythonToHerald(der: Bool) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("AuthKey_ABC123DEFG.p8")
        try #require(privateKey(of: key)).pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        let now = Date(timeIntervalSince1970: 1_767_225_600)
        let jwt = try await runPython(["sign", keyFile.path, "ABC123DEFG", "DEF123GHIJ", "1767225600"] + (der ? ["der"] : []))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let verified = try verifier().verify(authorization: "bearer " + jwt, now: now)
        #expect(verified.issuedAt == now)
    }

    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-jwt-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    func runPython(_ arguments: [String]) async throws -> String {
        let result = try await ProcessRunner.run("python3", [ProcessRunner.jwtScript(relativeTo: #filePath).path] + arguments)
        try #require(result.status == 0, "python3 failed: \(result.standardError) (is the cryptography package installed?)")
        return result.standardOutput
    }
}
