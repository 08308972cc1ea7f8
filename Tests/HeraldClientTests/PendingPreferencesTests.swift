import Foundation
import HeraldCore
import Testing

@testable import HeraldClient

/// The preferences change kept while the server cannot be reached: later choices win, what was sent is done.
@Suite("Client: pending preference changes")
struct PendingPreferencesTests {
    static let token = try! DeviceToken(hex: String(repeating: "ab", count: 32))
    static let other = try! DeviceToken(hex: String(repeating: "cd", count: 32))

    @Test("a later change wins per category; one for another token replaces it; it reads back as written")
    func merging() throws {
        let first = PendingPreferences(token: Self.token, changes: ["social": false, "marketing": true])
        let laterChanges: [String: Bool?] = ["marketing": nil, "news": true]
        let merged = first.merging(PendingPreferences(token: Self.token, changes: laterChanges))
        let expected: [String: Bool?] = ["social": false, "marketing": nil, "news": true]
        #expect(merged.changes == expected)
        #expect(PendingPreferences(data: Data(merged.jsonBytes)) == merged)
        let elsewhere = PendingPreferences(token: Self.other, changes: ["news": false])
        #expect(merged.merging(elsewhere) == elsewhere)
        #expect(PendingPreferences(data: Data("{\"token\": \"zz\"}".utf8)) == nil)
    }

    @Test("once a change reached the server, only the choices it did not carry, or that changed since, stay pending")
    func removing() {
        let sent = PendingPreferences(token: Self.token, changes: ["social": false, "marketing": true])
        let pendingChanges: [String: Bool?] = ["social": false, "marketing": false, "news": nil]
        let pending = PendingPreferences(token: Self.token, changes: pendingChanges)
        let left: [String: Bool?] = ["marketing": false, "news": nil]
        #expect(pending.removing(sent)?.changes == left)
        #expect(sent.removing(sent) == nil)
        #expect(pending.removing(PendingPreferences(token: Self.other, changes: ["social": false])) == pending)
    }

    @Test("changes applied locally: on, off, back to the default; a mandatory category stays on")
    func applying() {
        let preferences = NotificationPreferences(
            topic: "com.example.app", subject: .user,
            categories: [
                .init(name: "orders", mode: .mandatory, isEnabled: true, isChosen: false),
                .init(name: "social", mode: .on, isEnabled: false, isChosen: true),
                .init(name: "marketing", mode: .off, isEnabled: false, isChosen: false),
            ])
        let changes: [String: Bool?] = ["orders": false, "social": nil, "marketing": true]
        let applied = preferences.applying(changes)
        #expect(applied["orders"]?.isEnabled == true && applied["orders"]?.isChosen == false)
        #expect(applied["social"]?.isEnabled == true && applied["social"]?.isChosen == false)
        #expect(applied["marketing"]?.isEnabled == true && applied["marketing"]?.isChosen == true)
        #expect(NotificationPreferences(json: preferences.json) == preferences)
    }
}
