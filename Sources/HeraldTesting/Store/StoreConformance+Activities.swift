import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var activityCases: [Case] {
        [
            Case(
                "an activity is created once per app and id, counts its updates, and ends once; an ended one stays ended",
                activityLife)
        ]
    }

    static func activityLife(_ context: Context) async throws {
        let store = context.store
        let new = NewActivity(topic: topic, id: "order-1", activityType: "DeliveryAttributes")
        let created = try #require(try await store.createActivity(new))
        #expect(created.isActive && created.updates == 0 && created.endedAt == nil)
        #expect(created.activityType == "DeliveryAttributes" && created.createdAt == context.clock.now())
        #expect(try await store.createActivity(new) == nil, "an id is taken once per app")
        let otherApp = NewActivity(topic: "com.example.other", id: "order-1", activityType: "DeliveryAttributes")
        #expect(try await store.createActivity(otherApp) != nil, "ids are per app")

        context.clock.advance(by: .seconds(10))
        guard case .recorded(let updated) = try await store.recordActivityPush(topic: topic, id: "order-1", ending: false)
        else { Issue.record("a running activity takes an update"); return }
        #expect(updated.isActive && updated.updates == 1 && updated.updatedAt == context.clock.now())
        guard case .recorded(let ended) = try await store.recordActivityPush(topic: topic, id: "order-1", ending: true)
        else { Issue.record("a running activity can be ended"); return }
        #expect(!ended.isActive && ended.endedAt == context.clock.now() && ended.updates == 1)

        context.clock.advance(by: .seconds(10))
        #expect(
            try await store.recordActivityPush(topic: topic, id: "order-1", ending: false) == .ended(ended),
            "an ended activity takes no update and is not changed")
        #expect(
            try await store.recordActivityPush(topic: topic, id: "order-1", ending: true) == .ended(ended),
            "nor a second end: two racing ends cannot both go through")
        #expect(try await store.recordActivityPush(topic: topic, id: "unknown", ending: false) == .unknown)
        #expect(try await store.activity(topic: topic, id: "order-1") == ended)
        #expect(try await store.activity(topic: "com.example.other", id: "order-1")?.isActive == true)
    }
}
