import HeraldCore
import Testing

@Suite("Token kinds and platforms")
struct TokenKindTests {
    @Test("every platform and token kind round-trips through its wire name")
    func names() {
        #expect(Platform.all.map(\.name) == ["iOS", "macOS", "tvOS", "watchOS", "visionOS"])
        #expect(Platform.all.allSatisfy { Platform(name: $0.name) == $0 })
        #expect(Platform(name: "ios") == .iOS && Platform(name: "android") == nil)
        #expect(
            TokenKind.all.map(\.name) == [
                "device", "voip", "liveactivity-start", "liveactivity", "widgets", "controls", "location", "pushtotalk",
                "complication", "fileprovider", "webpush",
            ])
        #expect(TokenKind.all.allSatisfy { TokenKind(name: $0.name) == $0 })
    }

    @Test(
        "each token kind names the push types it can receive",
        arguments: [
            (TokenKind.device, [APNSPushType.alert, .background]), (.voip, [.voip]),
            (.liveActivityStart, [.liveactivity]), (.liveActivity, [.liveactivity]), (.widgets, [.widgets]),
            (.controls, [.controls]), (.location, [.location]), (.pushToTalk, [.pushtotalk]),
            (.complication, [.complication]), (.fileProvider, [.fileprovider]),
            // A web subscription is reached through its push service, never by an APNs push type.
            (.webPush, [.alert]),
        ])
    func pushTypes(kind: TokenKind, types: [APNSPushType]) {
        #expect(kind.pushTypes == types)
    }

    @Test("only Live Activity update and Push to Talk tokens may be several per installation")
    func onePerInstallation() {
        #expect(TokenKind.all.filter { !$0.isOnePerInstallation } == [.liveActivity, .pushToTalk])
    }
}
