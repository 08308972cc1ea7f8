import Foundation
import HeraldCore
import Testing

@Suite("Request headers")
struct HeadersTests {
    @Test("every push type has its topic suffix", arguments: [
        (APNSPushType.alert, ""), (.background, ""), (.complication, ".complication"),
        (.controls, ".push-type.controls"), (.fileprovider, ".pushkit.fileprovider"),
        (.liveactivity, ".push-type.liveactivity"), (.location, ".location-query"), (.pushtotalk, ".voip-ptt"),
        (.voip, ".voip"), (.widgets, ".push-type.widgets"),
    ])
    func suffixes(type: APNSPushType, suffix: String) {
        #expect(type.topicSuffix == suffix)
        #expect(type.topic(forBundleID: "com.example.app") == "com.example.app" + suffix)
        #expect(type.bundleID(fromTopic: "com.example.app" + suffix) == "com.example.app")
    }

    @Test("there are eleven push types; mdm has no suffix rule; VoIP alone allows 5,120 bytes")
    func pushTypes() {
        #expect(APNSPushType.allCases.count == 11)
        #expect(APNSPushType.mdm.topicSuffix == nil)
        #expect(APNSPushType.voip.maximumPayloadSize == 5120)
        #expect(APNSPushType.allCases.filter { $0 != .voip }.allSatisfy { $0.maximumPayloadSize == 4096 })
        #expect(APNSPushType(headerValue: "LiveActivity") == .liveactivity)
        #expect(APNSPushType(headerValue: "banner") == nil)
        #expect(APNSPushType.alert.bundleID(fromTopic: "com.example.app.voip") == nil)
    }

    @Test("priorities, expiration and apns-id parse their header forms")
    func parsing() {
        #expect(APNSPriority(headerValue: "10") == .immediate)
        #expect(APNSPriority(headerValue: "5") == .considerPower)
        #expect(APNSPriority(headerValue: "1") == .prioritizePowerOver)
        #expect(APNSPriority(headerValue: "7") == nil)
        #expect(APNSExpiration(headerValue: "0")?.isImmediate == true)
        #expect(APNSExpiration(headerValue: "1767225600")?.secondsSince1970 == 1_767_225_600)
        #expect(APNSExpiration(headerValue: "-1") == nil)
        #expect(APNSExpiration(headerValue: "soon") == nil)
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(APNSExpiration.after(.seconds(3600), from: now).secondsSince1970 == 1_003_600)
        #expect(APNSExpiration.at(now).hasPassed(at: now.addingTimeInterval(1)))
        #expect(!APNSExpiration.immediately.hasPassed(at: now))
        let id = APNSID()
        #expect(APNSID(headerValue: id.headerValue) == id)
        #expect(APNSID(headerValue: id.headerValue.uppercased()) == id)
        #expect(id.headerValue == id.headerValue.lowercased())
        #expect(APNSID(headerValue: "not-a-uuid") == nil)
        #expect(APNSID(headerValue: "{" + id.headerValue + "}") == nil)
    }

    @Test("random apns-ids are canonical lowercase version-4 UUIDs, reproducible from a seed")
    func randomAPNSIDs() {
        #expect(APNSID.headerValue(high: 0, low: 0) == "00000000-0000-4000-8000-000000000000")
        #expect(APNSID.headerValue(high: .max, low: .max) == "ffffffff-ffff-4fff-bfff-ffffffffffff")
        #expect(APNSID.headerValue(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210) == "01234567-89ab-4def-bedc-ba9876543210")
        var first = SeededRandomNumberGenerator(seed: 9)
        var second = SeededRandomNumberGenerator(seed: 9)
        let ids = (0..<500).map { _ in APNSID.randomHeaderValue(using: &first) }
        #expect(ids == (0..<500).map { _ in APNSID.randomHeaderValue(using: &second) })
        #expect(Set(ids).count == 500)
        #expect(ids.allSatisfy { APNSID(headerValue: $0)?.headerValue == $0 })
    }
}
