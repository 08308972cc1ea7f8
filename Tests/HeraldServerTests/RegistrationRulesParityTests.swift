import Foundation
import HeraldClient
import HeraldCore
import HeraldStore
import Testing

@testable import HeraldServer

/// The SDK, the server's parser and the store judge a registration by the same rules: what the SDK would send or
/// queue, the server accepts and the store keeps; what the server refuses, the SDK refuses before any request.
@Suite("Server: registration rules agree with the SDK and the store")
struct RegistrationRulesParityTests {
    static let token = Data((0..<32).map { UInt8($0) })

    static func registration(_ change: @Sendable (inout Registration) -> Void) throws -> Registration {
        var registration = try Registration(
            deviceToken: token, environment: .production, topic: "com.example.app", userID: "42",
            preferredLanguages: ["en-US"], appVersion: "2.4.1", platform: .iOS, tags: ["beta"], timeZone: "Asia/Tokyo")
        change(&registration)
        return registration
    }

    /// What each layer says: `nil` when it accepts, else the field it names.
    static func verdicts(of registration: Registration) -> (sdk: String?, server: String?, store: String?) {
        var sdk: String?
        do { try registration.validate() } catch { sdk = error.field }
        var server: String?
        var store: String?
        do {
            let body = try RegistrationBody(json: registration.jsonBytes)
            do {
                _ = try body.registration(topic: body.topic ?? "com.example.app").validated()
            } catch {
                store = "\(error)"
            }
        } catch {
            // The field's name, without the index of an entry (`tags[0]`) that the NUL check adds.
            let named = error.message.split(separator: "\"").dropFirst().first.map(String.init) ?? error.message
            server = String(named.prefix { $0 != "[" })
        }
        return (sdk, server, store)
    }

    @Test(
        "each registration is accepted by all three or refused by the SDK and the server naming the same field",
        arguments: [
            ("valid", { @Sendable (_: inout Registration) in }),
            ("control character in a tag", { @Sendable (r: inout Registration) in r.tags = ["a\u{0}b"] }),
            ("line break in the user id", { @Sendable (r: inout Registration) in r.userID = "42\n" }),
            ("C1 control in the app version", { @Sendable (r: inout Registration) in r.appVersion = "2.4\u{85}" }),
            ("control character in the topic", { @Sendable (r: inout Registration) in r.topic = "com.example\u{7}" }),
            ("space in the topic", { @Sendable (r: inout Registration) in r.topic = "com.example app" }),
            ("empty tag", { @Sendable (r: inout Registration) in r.tags = [""] }),
            ("51 tags", { @Sendable (r: inout Registration) in r.tags = (0..<51).map { "t\($0)" } }),
            ("long user id", { @Sendable (r: inout Registration) in r.userID = String(repeating: "é", count: 129) }),
            ("underscore language", { @Sendable (r: inout Registration) in r.preferredLanguages = ["en_US"] }),
            ("zone of odd shape", { @Sendable (r: inout Registration) in r.timeZone = "/Asia/Tokyo" }),
            (
                "push-to-start without its type",
                { @Sendable (r: inout Registration) in r.tokenKind = .liveActivityStart }
            ),
            (
                "update token with its activity",
                { @Sendable (r: inout Registration) in
                    r.tokenKind = .liveActivity
                    r.activityID = "order 1042"
                }
            ),
            (
                "device token naming an activity",
                { @Sendable (r: inout Registration) in r.activityID = "order-1042" }
            ),
        ] as [(String, @Sendable (inout Registration) -> Void)])
    func agree(name: String, change: @Sendable (inout Registration) -> Void) throws {
        let verdicts = Self.verdicts(of: try Self.registration(change))
        #expect(verdicts.sdk == verdicts.server, "\(name): SDK \(verdicts.sdk ?? "accepts"), server \(verdicts.server ?? "accepts")")
        #expect(verdicts.store == nil, "\(name): the store refused what the server accepted: \(verdicts.store ?? "")")
    }

    @Test("a well-formed zone the server's time-zone database lacks passes the SDK and is refused by the server only")
    func unknownZone() throws {
        let verdicts = Self.verdicts(of: try Self.registration { $0.timeZone = "Mars/Olympus_Mons" })
        #expect(verdicts.sdk == nil)
        #expect(verdicts.server == "timeZone")
    }
}
