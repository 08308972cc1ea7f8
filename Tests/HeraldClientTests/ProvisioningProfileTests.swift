import Foundation
import HeraldClient
import HeraldCore
import Testing

@Suite("Environment from the embedded provisioning profile")
struct ProvisioningProfileTests {
    static func fixture(_ name: String) throws -> URL {
        try #require(Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"))
    }

    @Test(
        "the aps-environment entitlement decides, in iOS and macOS profiles",
        arguments: [
            ("development.mobileprovision", APNSEnvironment.development, "Herald Demo Development"),
            ("production.mobileprovision", .production, "Herald Demo App Store"),
            ("macos-production.provisionprofile", .production, "Herald Demo Mac"),
        ])
    func profiles(file: String, environment: APNSEnvironment, name: String) throws {
        let url = try Self.fixture(file)
        let profile = try ProvisioningProfile(contentsOf: url)
        #expect(profile.apsEnvironment == environment)
        #expect(profile.name == name)
        #expect(profile.teamIdentifier == "TESTTEAM01")
        #expect(profile.expirationDate == Date(timeIntervalSince1970: 1_798_761_600))

        // The fallback says the opposite, so only the profile can have given the right answer.
        let resolved = ResolvedEnvironment.resolve(profileAt: url, fallback: environment.other)
        #expect(resolved.environment == environment)
        #expect(resolved.source == .provisioningProfile(url))
    }

    @Test("the plist is found inside the signed container, not just read as text")
    func containerIsBinary() throws {
        let data = try Data(contentsOf: try Self.fixture("development.mobileprovision"))
        #expect(data.prefix(2) == Data([0x30, 0x82]), "a DER SEQUENCE, as openssl cms wrote it")
        #expect(data.count > 2_000, "the signature and certificate surround the plist")
    }

    @Test("no profile, a profile without push, and a container without a plist all fall back, saying why")
    func fallbacks() throws {
        let none = ResolvedEnvironment.resolve(profileAt: nil, fallback: .production)
        #expect(none.environment == .production)
        #expect(none.source == .fallback(reason: "the app has no embedded provisioning profile"))

        let noPush = ResolvedEnvironment.resolve(
            profileAt: try Self.fixture("no-push.mobileprovision"), fallback: .production)
        #expect(noPush.environment == .production)
        guard case .fallback(let reason) = noPush.source else {
            Issue.record("expected a fallback, got \(noPush.source)")
            return
        }
        #expect(reason.contains("Push Notifications capability"))

        let notAProfile = try Self.fixture("not-a-profile.mobileprovision")
        #expect {
            try ProvisioningProfile(contentsOf: notAProfile)
        } throws: { ($0 as? ProvisioningProfileError)?.code == .noPropertyList }
        #expect(ResolvedEnvironment.resolve(profileAt: notAProfile, fallback: .development).environment == .development)

        let missing = URL(fileURLWithPath: "/nonexistent/embedded.mobileprovision")
        #expect {
            try ProvisioningProfile(contentsOf: missing)
        } throws: { ($0 as? ProvisioningProfileError)?.code == .unreadable }
    }

    @Test("a damaged plist is reported as such")
    func damaged() {
        let data = Data("junk<?xml version=\"1.0\"?><plist><dict><key>Name</key></plist>junk".utf8)
        #expect {
            try ProvisioningProfile(data: data)
        } throws: { ($0 as? ProvisioningProfileError)?.code == .invalidPropertyList }
    }

    @Test("the embedded profile is looked up where iOS and macOS bundles keep it")
    func embeddedLookup() throws {
        let bundleURL = FileManager.default.temporaryDirectory.appendingPathComponent("Demo-\(UUID().uuidString).app")
        defer { try? FileManager.default.removeItem(at: bundleURL) }
        try FileManager.default.createDirectory(
            at: bundleURL.appendingPathComponent("Contents"), withIntermediateDirectories: true)
        let bundle = try #require(Bundle(url: bundleURL))
        #expect(ProvisioningProfile.embeddedProfileURL(in: bundle) == nil)
        #expect(ResolvedEnvironment.resolve(bundle: bundle, fallback: .development).environment == .development)

        let macProfile = bundleURL.appendingPathComponent("Contents/embedded.provisionprofile")
        try FileManager.default.copyItem(at: try Self.fixture("macos-production.provisionprofile"), to: macProfile)
        #expect(ProvisioningProfile.embeddedProfileURL(in: bundle)?.lastPathComponent == "embedded.provisionprofile")
        #expect(ResolvedEnvironment.resolve(bundle: bundle, fallback: .development).environment == .production)
    }
}
