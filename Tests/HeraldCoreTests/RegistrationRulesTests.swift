import HeraldCore
import Testing

@Suite("Core: registration rules")
struct RegistrationRulesTests {
    static func fields(
        topic: String? = "com.example.app", userID: String? = "42", appVersion: String? = "2.4.1",
        preferredLanguages: [String] = ["en-US"], tags: [String] = ["beta"], timeZone: String? = "Europe/Paris",
        tokenKind: TokenKind = .device, activityType: String? = nil, activityID: String? = nil
    ) -> RegistrationRules.Fields {
        RegistrationRules.Fields(
            topic: topic, userID: userID, appVersion: appVersion, preferredLanguages: preferredLanguages, tags: tags,
            timeZone: timeZone, tokenKind: tokenKind, activityType: activityType, activityID: activityID)
    }

    @Test("a full, valid registration and an empty one pass")
    func valid() throws {
        try RegistrationRules.check(Self.fields())
        try RegistrationRules.check(
            Self.fields(topic: nil, userID: nil, appVersion: nil, preferredLanguages: [], tags: [], timeZone: nil))
        try RegistrationRules.check(Self.fields(tokenKind: .liveActivityStart, activityType: "DeliveryAttributes"))
        try RegistrationRules.check(Self.fields(tokenKind: .liveActivity, activityID: "order 1042"))
        try RegistrationRules.check(
            Self.fields(
                topic: String(repeating: "a", count: RegistrationRules.maximumTopicBytes),
                tags: Array(repeating: "t", count: RegistrationRules.maximumTags),
                timeZone: "America/Argentina/Buenos_Aires"))
    }

    @Test(
        "each broken rule names its field",
        arguments: [
            ("topic", RegistrationRulesTests.fields(topic: "")),
            ("topic", RegistrationRulesTests.fields(topic: "com.example app")),
            ("topic", RegistrationRulesTests.fields(topic: "com.example\u{0}.app")),
            ("topic", RegistrationRulesTests.fields(topic: String(repeating: "a", count: RegistrationRules.maximumTopicBytes + 1))),
            ("userId", RegistrationRulesTests.fields(userID: "")),
            ("userId", RegistrationRulesTests.fields(userID: "42\n")),
            ("userId", RegistrationRulesTests.fields(userID: "user\u{85}42")),
            ("userId", RegistrationRulesTests.fields(userID: String(repeating: "é", count: 129))),
            ("appVersion", RegistrationRulesTests.fields(appVersion: String(repeating: "9", count: 65))),
            ("appVersion", RegistrationRulesTests.fields(appVersion: "2.4\u{7F}")),
            ("preferredLanguages", RegistrationRulesTests.fields(preferredLanguages: ["en_US"])),
            ("preferredLanguages", RegistrationRulesTests.fields(preferredLanguages: ["ün"])),
            ("preferredLanguages", RegistrationRulesTests.fields(preferredLanguages: [""])),
            ("preferredLanguages", RegistrationRulesTests.fields(preferredLanguages: Array(repeating: "en", count: 21))),
            ("tags", RegistrationRulesTests.fields(tags: [""])),
            ("tags", RegistrationRulesTests.fields(tags: ["a\u{0}b"])),
            ("tags", RegistrationRulesTests.fields(tags: (0..<51).map { "t\($0)" })),
            ("tags", RegistrationRulesTests.fields(tags: [String(repeating: "t", count: 65)])),
            ("timeZone", RegistrationRulesTests.fields(timeZone: "")),
            ("timeZone", RegistrationRulesTests.fields(timeZone: "/Asia/Tokyo")),
            ("timeZone", RegistrationRulesTests.fields(timeZone: "Asia/Tokyo/")),
            ("timeZone", RegistrationRulesTests.fields(timeZone: "Europe/Zürich")),
            ("timeZone", RegistrationRulesTests.fields(timeZone: "Asia/ Tokyo")),
            ("activityType", RegistrationRulesTests.fields(tokenKind: .liveActivityStart)),
            ("activityType", RegistrationRulesTests.fields(tokenKind: .liveActivityStart, activityType: "Delivery Attributes")),
            ("activityType", RegistrationRulesTests.fields(tokenKind: .device, activityType: "DeliveryAttributes")),
            ("activityId", RegistrationRulesTests.fields(tokenKind: .liveActivity)),
            ("activityId", RegistrationRulesTests.fields(tokenKind: .liveActivity, activityID: "order\r1042")),
            ("activityId", RegistrationRulesTests.fields(tokenKind: .liveActivityStart, activityType: "A", activityID: "order-1042")),
        ] as [(String, RegistrationRules.Fields)])
    func broken(field: String, fields: RegistrationRules.Fields) {
        #expect {
            try RegistrationRules.check(fields)
        } throws: { error in
            guard let violation = error as? RegistrationRules.Violation else { return false }
            return violation.field == field && violation.description.hasPrefix("The field \"\(field)\" is invalid: ")
        }
    }

    @Test("a time zone id is judged by its shape here; whether it exists is for a time-zone database")
    func timeZoneShape() {
        #expect(RegistrationRules.hasTimeZoneShape("Etc/GMT+9"))
        #expect(RegistrationRules.hasTimeZoneShape("Mars/Olympus_Mons"))
        #expect(!RegistrationRules.hasTimeZoneShape("Europe/Paris\u{0}x"))
        #expect(!RegistrationRules.hasTimeZoneShape(String(repeating: "A", count: 65)))
    }
}
