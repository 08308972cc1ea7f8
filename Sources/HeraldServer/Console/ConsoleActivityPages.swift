import Foundation
import HTTPTypes
import HeraldAPNS
import HeraldCore
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

/// The Live Activities section: an app's activities with *End*, and its broadcast channels with *Create channel* and
/// *Delete*. Ending, creating and deleting go through ``ActivityOperations`` and ``ChannelOperations``, as
/// `DELETE /api/activities/{id}`, `POST /api/channels` and `DELETE /api/channels/{id}` do: the same checks, sends and
/// records.
struct ConsoleActivityPages: ConsolePages {
    let store: any Store
    let renderer: ConsoleRenderer
    let appIDs: [String]
    /// Ends activities, and counts their update tokens.
    let activities: ActivityOperations
    let channels: ChannelOperations
    let clock: any WallClock

    func addRoutes(viewer: RouterGroup<ServerRequestContext>, operator: RouterGroup<ServerRequestContext>) {
        viewer.get("/console/activities", use: activities)
        viewer.get("/console/channels", use: channels)
        `operator`.post("/console/activities/end", use: endActivity)
        `operator`.post("/console/channels", use: createChannel)
        `operator`.post("/console/channels/delete", use: deleteChannel)
    }

    /// Activities a page shows.
    static let activityPageSize = 25
    /// Channels a page shows.
    static let channelPageSize = 50

    // MARK: Activities

    @Sendable func activities(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let app = try chosenApp(request.queryParameter("app"), context)
        let status = try request.queryParameter("status") ?? ""
        let active = try ActivityOperations.status(status.isEmpty ? nil : status)
        var cursor: ActivityCursor?
        if let after = try request.queryParameter("after"), !after.isEmpty {
            guard let parsed = ActivityCursor(after) else {
                throw APIError.invalidField("after", "use the link of the previous page")
            }
            cursor = parsed
        }
        let page = try await store.activities(topic: app, active: active, after: cursor, limit: Self.activityPageSize)
        var rows: [ActivitiesView.Row] = []
        for activity in page.activities {
            // Ended activities' tokens get nothing more: only running ones are counted, each through the index.
            let tokens = activity.isActive ? String(try await activities.updateTokens(of: activity)) : "—"
            rows.append(
                ActivitiesView.Row(
                    id: activity.id, type: activity.activityType, active: activity.isActive,
                    updates: activity.updates, tokens: tokens, startedAt: Self.display(activity.createdAt),
                    endedAt: activity.endedAt.map(Self.display) ?? "—", budget: try await budgetText(of: activity),
                    starts: activity.startCheck.map { "\($0.started) started · \($0.notStarted) not" } ?? "—"))
        }
        let ended = try request.queryParameter("ended").flatMap { (try? ActivityOperations.activityID($0)) == nil ? nil : $0 }
        let view = ActivitiesView(
            app: app, apps: appChoices(app, context), rows: rows, hasRows: !rows.isEmpty,
            statuses: [("", "All"), ("active", "Active"), ("ended", "Ended")].map { value, label in
                ConsoleOption(value: value, label: label, selected: value == status)
            },
            tabs: tabs(.activities, app: app),
            pushToStartPace: Self.pushToStartPaceText(activities.engine.pushToStartRate),
            next: page.next.map {
                Self.link("/console/activities", [("app", app), ("status", status), ("after", $0.description)])
            },
            first: cursor == nil ? nil : Self.link("/console/activities", [("app", app), ("status", status)]),
            ended: ended,
            endSend: ended == nil ? nil : try request.queryParameter("send").flatMap(SendID.init)?.description)
        return renderer.page(
            "activities", title: "Live Activities", section: .activities, view: view, context: context)
    }

    /// activities.mustache's values.
    struct ActivitiesView: ConsoleView {
        struct Row {
            let id: String
            let type: String
            let active: Bool
            let updates: Int
            /// How many update tokens a running activity has; `—` for an ended one.
            let tokens: String
            let startedAt: String
            let endedAt: String
            let budget: String
            /// What its push-to-starts started, once checked: "80 started · 20 not".
            let starts: String
        }

        let app: String
        let apps: [ConsoleAppChoice]
        let rows: [Row]
        let hasRows: Bool
        let statuses: [ConsoleOption]
        let tabs: [Tab.Link]
        let pushToStartPace: String
        let next: String?
        let first: String?
        /// The activity just ended from this page, and the send that told its devices.
        let ended: String?
        let endSend: String?
    }

    /// How starts go out: "Starts are paced at 10 push-to-start notifications a second per app …", or not paced.
    static func pushToStartPaceText(_ perSecond: Int) -> String {
        guard perSecond > 0 else {
            return "Starts are not paced: each goes to its push-to-start tokens as fast as APNs takes them (HERALD_PUSH_TO_START_RATE=0)."
        }
        return "Starts are paced at \(perSecond) push-to-start notification\(perSecond == 1 ? "" : "s") a second per app, across every start and instance, in the background (HERALD_PUSH_TO_START_RATE)."
    }

    /// An activity's priority-10 updates this hour against its budget, and how many went at 5 instead: "3 of 12",
    /// "12 of 12 · 4 sent at priority 5".
    private func budgetText(of activity: ActivityRecord) async throws -> String {
        let limit = activities.updateBudget
        guard limit > 0 else { return "no budget" }
        let use = try await store.activityBudgetUse(topic: activity.topic, activityID: activity.id, at: clock.now())
        var text = "\(use.spent) of \(limit)"
        if use.downgraded > 0 { text += " · \(use.downgraded) sent at priority 5" }
        return text
    }

    /// Ends a running activity from the list (a form with the session's CSRF token, `app` and `id`), then shows the
    /// list.
    @Sendable func endActivity(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        let form = try await ConsoleForm.read(request, session: session)
        let id = try ActivityOperations.activityID(form["id"])
        let pushed = try await activities.push(ActivityChange(.end, topic: form["app"]), to: id, by: context.caller)
        context.logger.notice("Console ended a Live Activity", metadata: ["herald.activity": "\(id)"])
        var query = [("app", pushed.activity.topic), ("ended", id)]
        query.append(("send", pushed.accepted.record.id.description))
        return Self.redirect(Self.link("/console/activities", query))
    }

    // MARK: Channels

    @Sendable func channels(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let app = try chosenApp(request.queryParameter("app"), context)
        var outcome = ChannelsView.Outcome()
        if let created = try request.queryParameter("created"), APNSChannelID(created) != nil {
            outcome.created = created
        }
        if let deleted = try request.queryParameter("deleted"), APNSChannelID(deleted) != nil {
            outcome.deleted = deleted
            outcome.unknownToAPNs = try request.queryParameter("gone") != nil
        }
        return try await channelsPage(
            app: app, environment: request.queryParameter("environment") ?? "",
            after: request.queryParameter("after") ?? "", outcome: outcome, context: context)
    }

    /// The channels page of an app: its live channels (optionally of one environment) from a cursor, and the form.
    private func channelsPage(
        app: String, environment: String, after: String, outcome: ChannelsView.Outcome, context: ServerRequestContext,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let asked = environment.isEmpty ? nil : try ChannelOperations.environment(environment, field: "environment")
        let filter = Self.access(context).environment ?? asked
        let cursor = after.isEmpty ? nil : try ChannelOperations.channelID(after, field: "after").rawValue
        // One more than a page tells whether another follows.
        let found = try await store.liveChannels(
            topic: app, environment: filter, after: cursor, limit: Self.channelPageSize + 1)
        let shown = found.prefix(Self.channelPageSize)
        let rows = shown.map { channel in
            ChannelsView.Row(
                id: channel.id, environment: channel.environment.name,
                storagePolicy: channel.storagePolicy == 1 ? "1 · keeps the newest message" : "0 · stores nothing",
                createdAt: Self.display(channel.createdAt))
        }
        var next: String?
        if found.count > shown.count, let last = shown.last {
            next = Self.link("/console/channels", [("app", app), ("environment", environment), ("after", last.id)])
        }
        // Each environment's count against APNs's cap, for the environments the session sees.
        let counts = try await store.liveChannelCounts().filter { $0.topic == app }
        let seen = Self.access(context).environment
        let capacity = APNSEnvironment.all.reversed().filter { seen == nil || seen == $0 }
            .map { environment in
                let count = counts.first { $0.environment == environment }?.count ?? 0
                return ChannelsView.Capacity(
                    environment: environment.name, count: count.formatted(), cap: ChannelTidy.cap.formatted(),
                    nearCap: count >= ChannelTidy.warning)
            }
        let view = ChannelsView(
            created: outcome.created, deleted: outcome.deleted, unknownToAPNs: outcome.unknownToAPNs,
            error: outcome.error, app: app, apps: appChoices(app, context), rows: rows, hasRows: !rows.isEmpty,
            environments: [("", "Both"), ("development", "Development"), ("production", "Production")].map {
                value, label in ConsoleOption(value: value, label: label, selected: value == environment)
            },
            productionFirst: environment != "development", capacity: capacity, tabs: tabs(.channels, app: app), next: next,
            first: cursor == nil ? nil : Self.link("/console/channels", [("app", app), ("environment", environment)]))
        return renderer.page(
            "channels", title: "Broadcast channels", section: .activities, view: view, context: context,
            status: status)
    }

    /// channels.mustache's values.
    struct ChannelsView: ConsoleView {
        /// What the page says about the change that led to it.
        struct Outcome {
            var created: String?
            var deleted: String?
            /// Whether APNs no longer knew the deleted channel.
            var unknownToAPNs: Bool?
            var error: String?
        }

        struct Row {
            let id: String
            let environment: String
            let storagePolicy: String
            let createdAt: String
        }

        let created: String?
        let deleted: String?
        let unknownToAPNs: Bool?
        let error: String?
        let app: String
        let apps: [ConsoleAppChoice]
        let rows: [Row]
        let hasRows: Bool
        let environments: [ConsoleOption]
        let productionFirst: Bool
        /// Live channels per environment against APNs's cap of 10,000.
        let capacity: [Capacity]
        let tabs: [Tab.Link]
        let next: String?
        let first: String?

        struct Capacity {
            let environment: String
            let count: String
            let cap: String
            let nearCap: Bool
        }
    }

    /// Creates a channel on APNs from the form (`app`, `environment`, `storagePolicy`); a refusal (a bad field, or
    /// APNs's) is shown above the form with its status, and nothing is created.
    @Sendable func createChannel(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        let form = try await ConsoleForm.read(request, session: session)
        do {
            let creation = ChannelCreation(
                topic: form["app"], environment: try ChannelCreation.environment(form["environment"]),
                // A policy that is not a number is refused as one out of range is.
                storagePolicy: try ChannelCreation.storagePolicy(form["storagePolicy"].map { Int($0) ?? -1 }))
            let created = try await channels.createChannel(creation, by: context.caller)
            context.logger.notice(
                "Console created a broadcast channel", metadata: [LogKey.channelID: "\(created.channel.id)"])
            return Self.redirect(
                Self.link("/console/channels", [("app", created.channel.topic), ("created", created.channel.id)]))
        } catch let error as APIError {
            return try await channelsPage(
                app: chosenApp(form["app"], context), environment: "", after: "", outcome: ChannelsView.Outcome(error: error.message),
                context: context, status: error.status)
        }
    }

    /// Deletes a live channel (a form with the session's CSRF token and `id`) on APNs and here, then shows the list.
    @Sendable func deleteChannel(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        let form = try await ConsoleForm.read(request, session: session)
        let deleted = try await channels.deleteChannel(form["id"] ?? "", by: context.caller)
        context.logger.notice(
            "Console deleted a broadcast channel", metadata: [LogKey.channelID: "\(deleted.channel.id)"])
        var query = [("app", deleted.channel.topic), ("deleted", deleted.channel.id)]
        if deleted.unknownToAPNs { query.append(("gone", "1")) }
        return Self.redirect(Self.link("/console/channels", query))
    }

    // MARK: Helpers

    /// The section's two pages.
    enum Tab {
        case activities, channels

        /// A link to one of the pages, marked when it is the one shown.
        struct Link {
            let label: String
            let href: String
            let current: Bool
        }
    }

    /// The links between the section's pages, for the app shown.
    private func tabs(_ current: Tab, app: String) -> [Tab.Link] {
        [
            Tab.Link(
                label: "Activities", href: Self.link("/console/activities", [("app", app)]), current: current == .activities),
            Tab.Link(
                label: "Broadcast channels", href: Self.link("/console/channels", [("app", app)]),
                current: current == .channels),
        ]
    }
}
