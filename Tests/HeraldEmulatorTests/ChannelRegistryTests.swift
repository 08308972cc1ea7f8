@testable import HeraldEmulator
import HeraldCore
import Testing

@Suite("Emulator: the channel registry")
struct ChannelRegistryTests {
    @Test("the registry holds 10,000 channels per app and environment, then refuses; a delete makes room")
    func limit() {
        let registry = ChannelRegistry(limitPerApp: 10_000, seed: 1)
        var ids = Set<String>()
        for _ in 0..<10_000 {
            let channel = registry.create(bundleID: "com.example.app", environment: .development, storagePolicy: 0)
            ids.insert(channel!.id)
        }
        #expect(ids.count == 10_000)
        #expect(registry.create(bundleID: "com.example.app", environment: .development, storagePolicy: 0) == nil)
        #expect(registry.create(bundleID: "com.example.app", environment: .production, storagePolicy: 0) != nil)
        #expect(registry.create(bundleID: "com.example.other", environment: .development, storagePolicy: 1) != nil)
        #expect(registry.delete(ids.first!, bundleID: "com.example.app", environment: .development))
        let replacement = registry.create(bundleID: "com.example.app", environment: .development, storagePolicy: 0)
        #expect(replacement != nil && !ids.contains(replacement!.id))
    }
}
