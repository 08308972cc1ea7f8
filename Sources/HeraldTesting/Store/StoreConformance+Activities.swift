import Foundation
import HeraldCore
import HeraldStore
import Testing

extension StoreConformance {
    static var activityCases: [Case] {
        [
            Case(
                "an activity is created once per app and id, counts its updates, and ends once; an ended one stays ended",
                activityLife),
            Case(
                "an app's activities are listed newest first by page, all of them, running or ended, from a cursor that survives its text form",
                activityList),
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

    static func activityList(_ context: Context) async throws {
        let store = context.store
        // Five activities a minute apart, and two more started in the same microsecond: the id breaks the tie.
        for index in 1...5 {
            _ = try await store.createActivity(NewActivity(topic: topic, id: "order-\(index)", activityType: "Delivery"))
            context.clock.advance(by: .seconds(60))
        }
        for id in ["same-a", "same-b"] {
            _ = try await store.createActivity(NewActivity(topic: topic, id: id, activityType: "Delivery"))
        }
        _ = try await store.createActivity(NewActivity(topic: "com.example.other", id: "elsewhere", activityType: "Delivery"))
        for id in ["order-2", "order-4", "same-a"] {
            _ = try await store.recordActivityPush(topic: topic, id: id, ending: true)
        }

        let newestFirst = ["same-b", "same-a", "order-5", "order-4", "order-3", "order-2", "order-1"]
        let all = try await store.activities(topic: topic, active: nil, after: nil, limit: 10)
        #expect(all.activities.map(\.id) == newestFirst && all.next == nil, "this app's only, newest first")
        #expect(all.activities.map(\.isActive) == [true, false, true, false, true, false, true])

        var walked: [String] = []
        var cursor: ActivityCursor?
        repeat {
            let page = try await store.activities(
                topic: topic, active: nil, after: cursor.flatMap { ActivityCursor($0.description) }, limit: 3)
            #expect(page.activities.count <= 3)
            walked += page.activities.map(\.id)
            cursor = page.next
        } while cursor != nil
        #expect(walked == newestFirst, "pages of 3 through the cursor's text form: each activity once, in order")
        let exact = try await store.activities(topic: topic, active: nil, after: nil, limit: 7)
        #expect(exact.next == nil, "a full last page says no more follow")

        let running = try await store.activities(topic: topic, active: true, after: nil, limit: 2)
        #expect(running.activities.map(\.id) == ["same-b", "order-5"] && running.next != nil)
        let moreRunning = try await store.activities(topic: topic, active: true, after: running.next, limit: 2)
        #expect(moreRunning.activities.map(\.id) == ["order-3", "order-1"] && moreRunning.next == nil)
        let ended = try await store.activities(topic: topic, active: false, after: nil, limit: 10)
        #expect(ended.activities.map(\.id) == ["same-a", "order-4", "order-2"])
        #expect(try await store.activities(topic: "com.example.none", active: nil, after: nil, limit: 10).activities.isEmpty)

        #expect(ActivityCursor("12_order_with_underscores")?.description == "12_order_with_underscores")
        for bad in ["", "12", "x_order", "12_", "_order"] {
            #expect(ActivityCursor(bad) == nil, "\(bad) is not a cursor")
        }
    }
}
