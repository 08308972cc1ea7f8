import Foundation
import HTTPTypes
import HeraldCore
import HeraldEmulator
import HeraldSending
import HeraldStore
import Hummingbird
import Logging

extension ConsoleController {
    private static let day: TimeInterval = 86_400

    // MARK: Overview

    @Sendable func overview(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        if Self.isScoped(context), let key = session.apiKey { return try await scopedOverview(key, context: context) }
        let now = clock.now()
        let today = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / Self.day).rounded(.down) * Self.day)
        async let counted = deviceFigures.snapshot()
        async let lastDay = store.sendStatistics(since: now.addingTimeInterval(-Self.day), reasons: 5)
        async let lastWeek = store.sendStatistics(since: now.addingTimeInterval(-7 * Self.day), reasons: 6)
        async let perDay = store.sendsPerDay(since: today.addingTimeInterval(-6 * Self.day))
        let snapshot = try await counted
        let statistics = snapshot.devices
        let day = try await lastDay
        let week = try await lastWeek

        let newByDay = Dictionary(snapshot.newDevices.map { ($0.day, $0.count) }, uniquingKeysWith: +)
        let sendsByDay = Dictionary(try await perDay.map { ($0.day, $0.counts) }, uniquingKeysWith: { a, _ in a })
        let fortnight = (0..<14).map { today.addingTimeInterval(Double($0 - 13) * Self.day) }
        let sevenDays = fortnight.suffix(7)
        let outcomeSeries = [
            ConsoleCharts.Series(name: "accepted", style: 1), ConsoleCharts.Series(name: "rejected", style: 2),
            ConsoleCharts.Series(name: "failed", style: 3),
        ]
        func figures(_ statistics: SendStatistics) -> [String: Any] {
            let rates = ReceiptRates(statistics.receipts, accepted: statistics.counts.accepted)
            return [
                "sends": statistics.sends, "accepted": statistics.counts.accepted,
                "rejected": statistics.counts.rejected, "removed": statistics.removed,
                "received": statistics.receipts.received, "opened": statistics.receipts.opened,
                "receivedRate": rates.map { ReceiptRates.percent($0.received) } ?? "",
                "openedRate": rates.map { ReceiptRates.percent($0.opened) } ?? "",
            ]
        }
        func outcomes(_ statistics: SendStatistics, _ label: String) -> String {
            ConsoleCharts.bars(
                [
                    Tally("accepted", statistics.counts.accepted), Tally("rejected", statistics.counts.rejected),
                    Tally("failed", statistics.counts.failed), Tally("tokens removed", statistics.removed),
                ], label: label)
        }
        let deviceCharts: [[String: Any]] = [
            ("by-app", "Devices by app", statistics.byTopic, "unknown"),
            ("by-environment", "Devices by environment", statistics.byEnvironment, "unknown"),
            ("by-kind", "Devices by token kind", statistics.byTokenKind, "unknown"),
            ("by-platform", "Devices by platform", statistics.byPlatform, "not reported"),
        ].map { id, title, tallies, empty in
            ["id": id, "title": title, "svg": ConsoleCharts.bars(tallies, label: title, emptyName: empty)]
        }
        let data: [String: Any] = [
            "devices": statistics.total,
            "noDevices": statistics.total == 0,
            // false, not "": Mustache renders a section for any string, the empty one too ("counted at : …").
            "devicesCountedAt": snapshot.fromCache ? RFC3339.string(snapshot.countedAt) : false,
            "emptyDevices": emptyDevices(request),
            "day": figures(day), "week": figures(week),
            "deviceCharts": deviceCharts,
            "newDevicesChart": ConsoleCharts.days(
                fortnight.map { ($0, [newByDay[$0] ?? 0]) }, series: [.init(name: "new devices", style: 1)],
                label: "New devices per day over the last 14 days"),
            "sendsChart": ConsoleCharts.days(
                sevenDays.map { date in
                    let counts = sendsByDay[date] ?? OutcomeCounts()
                    return (date, [counts.accepted, counts.rejected, counts.failed])
                }, series: outcomeSeries, label: "Accepted, rejected and failed notifications per day, last 7 days"),
            "dayChart": outcomes(day, "Outcomes of the last 24 hours"),
            "weekChart": outcomes(week, "Outcomes of the last 7 days"),
            "hasReasons": !week.topReasons.isEmpty,
            "reasons": week.topReasons.map(\.name),
            "reasonsChart": ConsoleCharts.bars(week.topReasons, label: "Top rejection reasons of the last 7 days"),
            "apns": apnsData(),
            "checks": deploymentChecksData(),
        ]
        return renderer.page("overview", title: "Overview", section: .overview, data: data, context: context)
    }

    /// The overview of a session limited to some apps: its limits and its apps' latest sends. The deployment's
    /// figures count every app (their store queries have no app filter), so they are not shown.
    private func scopedOverview(_ key: APIKey, context: ServerRequestContext) async throws -> Response {
        let page = try await store.recentSends(after: nil, limit: 10, topics: Self.access(context).topics)
        let rows: [[String: Any]] = page.sends.map { send in
            [
                "id": send.id.description, "createdAt": Self.display(send.createdAt), "target": send.target,
                "status": send.status.rawValue, "accepted": send.counts.accepted, "rejected": send.counts.rejected,
            ]
        }
        var data: [String: Any] = [
            "keyName": key.name, "appList": visibleApps(context).joined(separator: ", "),
            "single": visibleApps(context).count == 1, "sends": rows, "hasSends": !rows.isEmpty,
        ]
        if let environment = key.environment { data["environment"] = environment.name }
        return renderer.page("overview-scoped", title: "Overview", section: .overview, data: data, context: context)
    }

    /// `herald doctor`'s checks as the server ran them at start, for the overview.
    private func deploymentChecksData() -> [String: Any] {
        guard let report = deploymentChecks() else { return ["ran": false] }
        let styles: [DeploymentCheck.Status: String] = [.ok: "ok", .warning: "warn", .failure: "bad", .skipped: "skipped"]
        return [
            "ran": true, "summary": report.summary,
            "list": report.checks.map { check in
                [
                    "name": check.name, "status": check.status.rawValue, "mark": check.status.mark,
                    "style": styles[check.status] ?? "", "message": check.message,
                ]
            },
        ]
    }

    // MARK: Compose

    @Sendable func compose(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let token = try request.queryParameter("token").flatMap { try? DeviceToken(hex: $0) }?.hex
        let kind = token == nil ? "user" : "token"
        let data: [String: Any] = [
            "apps": visibleApps(context), "firstApp": visibleApps(context).first ?? "",
            "pushTypes": APNSPushType.allCases.filter { $0 != .mdm }.map(\.rawValue),
            "kindToken": kind == "token", "kindUser": kind == "user", "kindTag": false, "kindTopic": false,
            "targetValue": token ?? "", "testToken": token ?? "",
            "title": token == nil ? "" : "Test from the Herald console",
            "body": token == nil ? "" : "If you can read this, pushes reach this device.",
        ]
        return renderer.page(
            "compose", title: "Compose", section: .compose, data: data, context: context, scripts: ["compose.js"])
    }

    // MARK: Sends

    @Sendable func sends(_ request: Request, context: ServerRequestContext) async throws -> Response {
        var cursor: SendListCursor?
        if let after = try request.queryParameter("after"), !after.isEmpty {
            guard let parsed = SendListCursor(after) else {
                throw APIError.invalidField("after", "use the link of the previous page")
            }
            cursor = parsed
        }
        let page = try await store.recentSends(after: cursor, limit: 25, topics: Self.access(context).topics)
        let now = clock.now()
        let rows: [[String: Any]] = page.sends.map { send in
            var row = Self.progress(send)
            row["id"] = send.id.description
            row["createdAt"] = Self.display(send.createdAt)
            row["target"] = send.target
            row["summary"] = send.summary
            row["status"] = send.status.rawValue
            if let schedule = Self.schedule(of: send, now: now) { row["schedule"] = schedule }
            return row
        }
        var data: [String: Any] = ["sends": rows, "hasSends": !rows.isEmpty]
        if let next = page.next { data["next"] = "/console/sends?after=\(next)" }
        return renderer.page("sends", title: "Sends", section: .sends, data: data, context: context)
    }

    /// A send's counts and progress, for templates.
    static func progress(_ send: SendRecord) -> [String: Any] {
        // Devices a frequency cap left out are among the target count, and done: they get nothing.
        let done = send.counts.total + send.suppressed.frequencyCap
        let total = max(send.targetCount ?? done, done)
        return [
            "done": done, "total": max(total, 1), "percent": total == 0 ? 100 : done * 100 / total,
            "accepted": send.counts.accepted, "rejected": send.counts.rejected, "failed": send.counts.failed,
            "capped": send.suppressed.frequencyCap, "preferenceOut": send.suppressed.preference,
            "suppressed": suppressedText(send.suppressed),
        ]
    }

    /// What the rules about the person removed or deferred, in words; empty when none applied.
    static func suppressedText(_ counts: SuppressedCounts) -> String {
        var parts: [String] = []
        if counts.preference > 0 { parts.append("\(counts.preference) opted out of the category") }
        if counts.frequencyCap > 0 { parts.append("\(counts.frequencyCap) over a frequency cap") }
        if counts.quietHoursDropped > 0 { parts.append("\(counts.quietHoursDropped) dropped in their quiet hours") }
        if counts.quietHoursDeferred > 0 {
            parts.append("\(counts.quietHoursDeferred) deferred to the end of their quiet hours")
        }
        return parts.isEmpty ? "" : "Rules: " + parts.joined(separator: ", ") + "."
    }

    /// How a scheduled send (queued, with a `sendAt` still ahead) reads: `Scheduled for <time>`, and for a send at
    /// each device's local time, that time and its next wave; `nil` for any other send.
    static func schedule(of send: SendRecord, now: Date) -> [String: Any]? {
        guard send.status == .queued, let sendAt = send.sendAt, sendAt > now else { return nil }
        var schedule: [String: Any] = ["at": display(sendAt), "instant": RFC3339.string(sendAt)]
        // Only a scheduled send's job is read (a `tokens` send's can be large): the local time is nowhere else. Jobs of
        // both versions (the request body, and SendJob's stored form) name it `localTime` and its zone `timeZone`.
        if let job = send.job, let stored = try? JSONValue(parsing: job),
            let local = stored["localTime"]?.stringValue.flatMap(LocalDateTime.init)
        {
            // As people write it: 2026-12-24 09:00, with the seconds only when there are some.
            let text = local.description.replacingOccurrences(of: "T", with: " ")
            schedule["localTime"] = local.second == 0 ? String(text.dropLast(3)) : text
            // Foundation on Linux names the default zone, UTC, "GMT": a version-2 job stores that name.
            let zone = stored["timeZone"]?.stringValue ?? "UTC"
            schedule["unsetZone"] = zone == "GMT" ? "UTC" : zone
        }
        return schedule
    }

    @Sendable func send(_ request: Request, context: ServerRequestContext) async throws -> Response {
        guard let id = context.parameters.get("id").flatMap(SendID.init), let send = try await store.send(id),
            Self.access(context).sees(app: send.topic)
        else {
            throw APIError(.notFound, reason: "unknownSend", "There is no such send: pick one from the list of sends.")
        }
        var cursor: OutcomeCursor?
        if let after = try request.queryParameter("after"), !after.isEmpty { cursor = OutcomeCursor(after) }
        async let groups = endedSendGroups.groups(of: send, in: store)
        async let page = store.outcomes(of: id, after: cursor, limit: 50)
        async let receipts = store.receiptCounts(of: id)
        var data = Self.progress(send)
        data["id"] = send.id.description
        data["target"] = send.target
        data["summary"] = send.summary
        data["status"] = send.status.rawValue
        data["createdAt"] = Self.display(send.createdAt)
        data["cancellable"] = send.status == .queued || send.status == .running
        data["lane"] = send.lane.rawValue
        if send.status == .running, let worker = send.worker { data["worker"] = worker }
        if let shardCount = send.shardCount {
            data["shardCount"] = shardCount
            let shards: [[String: Any]] = try await store.shards(of: id).map { shard in
                [
                    "index": shard.index, "status": shard.status.rawValue, "worker": shard.worker ?? "—",
                    "recorded": shard.recorded, "size": shard.size,
                ]
            }
            data["shards"] = shards
            data["hasShards"] = !shards.isEmpty
        }
        if let schedule = Self.schedule(of: send, now: clock.now()) { data["schedule"] = schedule }
        data["csrf"] = context.consoleSession?.csrfToken ?? ""
        if let message = send.message {
            data["message"] = message
            data["messageClass"] = send.status == .failed ? "error" : "hint"
        }
        let counts = try await receipts
        let rates = ReceiptRates(counts, accepted: send.counts.accepted)
        data["received"] = counts.received
        data["opened"] = counts.opened
        data["actions"] = counts.actions
        data["dismissed"] = counts.dismissed
        data["receivedRate"] = rates.map { ReceiptRates.percent($0.received) } ?? "—"
        data["openedRate"] = rates.map { ReceiptRates.percent($0.opened) } ?? "—"
        let groupRows: [[String: Any]] = try await groups.map { group in
            [
                "kind": group.kind, "reason": group.reason ?? "—", "count": group.count,
                "action": group.action.map(Self.describe) ?? "—",
            ]
        }
        data["groups"] = groupRows
        data["hasGroups"] = !groupRows.isEmpty
        let outcomes = try await page
        let reveal = Self.revealsTokens(context)
        let outcomeRows: [[String: Any]] = outcomes.outcomes.map { outcome in
            [
                "token": reveal ? outcome.token.hex : false, "suffix": String(outcome.token.hex.suffix(8)),
                "environment": outcome.environment.name, "status": outcome.result.kind,
                "detail": Self.detail(outcome), "at": Self.display(outcome.at),
            ]
        }
        data["outcomes"] = outcomeRows
        data["hasOutcomes"] = !outcomeRows.isEmpty
        if let next = outcomes.next { data["next"] = "/console/sends/\(id)?after=\(next)" }
        if cursor != nil { data["first"] = "/console/sends/\(id)" }
        return renderer.page(
            "send", title: "Send to \(send.target)", section: .sends, data: data, context: context,
            scripts: ["send.js"])
    }

    /// Cancels a queued or running send from its page (a form with the session's CSRF token), then shows the page.
    @Sendable func cancelSend(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        _ = try await ConsoleForm.read(request, session: session)
        let unknown = APIError(
            .notFound, reason: "unknownSend", "There is no such send: pick one from the list of sends.")
        guard let id = context.parameters.get("id").flatMap(SendID.init) else { throw unknown }
        if Self.isScoped(context) {
            guard let existing = try await store.send(id), Self.access(context).sees(app: existing.topic) else { throw unknown }
        }
        do {
            let record = try await engine.cancel(id)
            context.logger.notice("Console cancelled a send", metadata: [LogKey.sendID: "\(id)"])
            await audit.record(.sendCancelled, context, app: record.topic, subject: id.description, detail: record.target)
        } catch let error as SendError where error.code == .sendFinished {
            // It ended meanwhile: its page shows how.
        } catch let error as SendError where error.code == .unknownSend {
            throw unknown
        }
        return Self.redirect("/console/sends/\(id)")
    }

    static func describe(_ action: DeliveryOutcome.Action) -> String {
        switch action {
        case .removed: "token removed from sends"
        case .kept: "token kept (registered again after APNs's answer)"
        case .environmentCorrected: "environment corrected"
        }
    }

    /// An outcome's detail in words: the apns-id, the reason and what Herald did, or the failure.
    static func detail(_ outcome: DeliveryOutcome) -> String {
        var text: String
        switch outcome.result {
        case .accepted(let apnsID): text = "apns-id \(apnsID.headerValue)"
        case .rejected(let status, let reason, _): text = "\(status) \(reason.rawValue)"
        case .failed(let message): text = message
        }
        if let action = outcome.action { text += "; " + describe(action) }
        return text
    }

    // MARK: Devices

    @Sendable func devices(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let search = (try request.queryParameter("q") ?? "").trimmingCharacters(in: .whitespaces)
        let user = (try request.queryParameter("user") ?? "").trimmingCharacters(in: .whitespaces)
        let tag = (try request.queryParameter("tag") ?? "").trimmingCharacters(in: .whitespaces)
        let app = try chosenApp(request.queryParameter("app"), context)
        var data: [String: Any] = ["q": search, "user": user, "tag": tag, "apps": appChoices(app, context)]
        if let removed = try request.queryParameter("removed") {
            data["notice"] = "Device …\(removed) removed: it gets no pushes until its app registers it again."
        }
        var found: [DeviceRegistration] = []
        var description: String
        let filtered = !search.isEmpty || !user.isEmpty || !tag.isEmpty
        if !search.isEmpty {
            let hex = search.lowercased().filter { !" <>".contains($0) }
            guard hex.count >= 4, hex.count <= 1024, hex.allSatisfy(\.isHexDigit) else {
                data["error"] = "Search a token by at least 4 of its hex digits, such as its last 8."
                return renderer.page("devices", title: "Devices", section: .devices, data: data, context: context)
            }
            let access = Self.access(context)
            found = try await store.devices(withTokenSuffix: hex, limit: 50).filter {
                access.sees(app: $0.topic) && access.sees(environment: $0.environment)
            }
            description = "Tokens ending in \(hex)"
        } else {
            var query: DeviceQuery
            if !user.isEmpty {
                query = .user(user)
                description = "Devices of user \(user)"
            } else if !tag.isEmpty {
                query = .tag(tag)
                description = "Devices tagged \(tag)"
            } else {
                query = .topic(app)
                description = "Devices of \(app)"
            }
            query = query.inTopic(app).includingInvalidated()
            if let environment = Self.access(context).environment { query = query.environment(environment) }
            var cursor: DeviceCursor?
            if let after = try request.queryParameter("after"), !after.isEmpty { cursor = DeviceCursor(after) }
            let page = try await store.devices(matching: query, after: cursor, limit: 50)
            found = page.devices
            if let next = page.next {
                data["next"] = Self.link(
                    "/console/devices", [("user", user), ("tag", tag), ("app", app), ("after", next.description)])
            }
        }
        if search.isEmpty, !user.isEmpty, !found.isEmpty {
            // The user view: the person's choices in the app, which hold on every device of theirs.
            data["userPreferences"] = try await preferenceSection(
                topic: app, subject: .user(user), returnTo: Self.link("/console/devices", [("user", user), ("app", app)]),
                context: context)
        }
        if try request.queryParameter("preferences") != nil { data["notice"] = "The preferences were saved." }
        data["description"] = description
        let reveal = Self.revealsTokens(context)
        data["rows"] = found.map { device in
            var row = Self.row(device)
            if !reveal { row["token"] = false }
            return row
        }
        data["hasRows"] = !found.isEmpty
        if found.isEmpty {
            if filtered {
                data["searchedNothing"] = true
            } else {
                data["noDevices"] = true
                data["emptyDevices"] = emptyDevices(request)
            }
        }
        return renderer.page("devices", title: "Devices", section: .devices, data: data, context: context)
    }

    /// Whether the session's pages show whole device tokens (and link to device and delivery pages by them): not to
    /// a viewer, who sees `…` and the last 8 hex digits, as a read-only API key does (docs/security.md).
    static func revealsTokens(_ context: ServerRequestContext) -> Bool {
        context.consoleSession.map { ConsoleRole($0) > .viewer } ?? false
    }

    /// A registration as a table row.
    static func row(_ device: DeviceRegistration) -> [String: Any] {
        let registration = device.registration
        return [
            "token": registration.token.hex, "suffix": String(registration.token.hex.suffix(8)),
            "topic": registration.topic, "environment": registration.environment.name,
            "kind": registration.tokenKind.name, "platform": registration.platform?.name ?? "—",
            "user": registration.userID ?? "—", "tags": registration.tags.joined(separator: ", "),
            "registeredAt": display(device.registeredAt), "active": device.isActive,
        ]
    }

    private func deviceToken(_ context: ServerRequestContext) throws -> DeviceToken {
        guard let hex = context.parameters.get("token"), let token = try? DeviceToken(hex: hex) else {
            throw APIError(.notFound, reason: "unknownToken", "There is no such device: search for it by token.")
        }
        return token
    }

    @Sendable func device(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let token = try deviceToken(context)
        guard let device = try await store.device(token), Self.access(context).sees(app: device.topic),
            Self.access(context).sees(environment: device.environment)
        else {
            throw APIError(
                .notFound, reason: "unknownToken",
                "No device has this token: it was never registered, or it was removed.")
        }
        let deliveries = try await store.deliveries(to: token, limit: 50)
        var data = Self.row(device)
        let registration = device.registration
        data["languages"] = registration.preferredLanguages.joined(separator: ", ")
        data["appVersion"] = registration.appVersion ?? "—"
        data["installation"] = registration.installationID?.lowercasedText ?? "—"
        data["createdAt"] = Self.display(device.createdAt)
        data["deliveries"] = deliveries.map { delivery -> [String: Any] in
            [
                "at": Self.display(delivery.outcome.at), "sendID": delivery.sendID.description,
                "target": delivery.target, "summary": delivery.summary, "status": delivery.outcome.result.kind,
                "detail": Self.detail(delivery.outcome),
            ]
        }
        data["hasDeliveries"] = !deliveries.isEmpty
        var removals: [[String: Any]] = deliveries.compactMap { delivery in
            guard delivery.outcome.action != nil else { return nil }
            return [
                "at": Self.display(delivery.outcome.at),
                "what": "\(Self.detail(delivery.outcome)) (send to \(delivery.target))",
            ]
        }
        if let invalidation = device.invalidation {
            removals.insert(
                [
                    "at": Self.display(invalidation.recordedAt),
                    "what": "removed from sends after APNs answered \(invalidation.reason.rawValue)"
                        + (invalidation.apnsTimestamp.map { " (APNs timestamp \(Self.display($0)))" } ?? ""),
                ], at: 0)
        }
        data["removals"] = removals
        data["hasRemovals"] = !removals.isEmpty
        if device.isActive {
            data["preferences"] = try await preferenceSection(
                topic: device.topic, subject: PreferenceSubject(of: registration),
                returnTo: "/console/devices/\(token.hex)", context: context)
        }
        if try request.queryParameter("preferences") != nil { data["notice"] = "The preferences were saved." }
        return renderer.page(
            "device", title: "Device …\(token.hex.suffix(8))", section: .devices, data: data, context: context)
    }

    @Sendable func removeDevice(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        _ = try await ConsoleForm.read(request, session: session)
        let token = try deviceToken(context)
        let removed = try await store.device(token)
        if Self.isScoped(context) {
            guard let removed, Self.access(context).sees(app: removed.topic) else {
                throw APIError(.notFound, reason: "unknownToken", "No device has this token: search for it by token.")
            }
        }
        _ = try await store.remove(token)
        context.logger.notice("Console removed a device", metadata: [LogKey.tokenSuffix: "\(token.redacted)"])
        await audit.record(.deviceRemoved, context, app: removed?.topic, subject: token.redacted)
        return Self.redirect("/console/devices?removed=\(token.hex.suffix(8))")
    }

    // MARK: API keys

    @Sendable func keys(_ request: Request, context: ServerRequestContext) async throws -> Response {
        try Self.access(context).requireUnscoped("managing keys")
        var data: [String: Any] = [:]
        if try request.queryParameter("revoked") != nil { data["notice"] = "The key was revoked: it no longer works." }
        return try await keysPage(data, context: context)
    }

    private func keysPage(
        _ extra: [String: Any], context: ServerRequestContext, status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let now = clock.now()
        let stored = try await store.apiKeys()
        let keys = stored.reversed().map { key -> [String: Any] in
            let apps = key.apps.isEmpty ? "every app" : key.apps.sorted().joined(separator: ", ")
            var row: [String: Any] = [
                "id": key.id.lowercasedText, "name": key.name, "prefix": key.prefix.isEmpty ? "—" : key.prefix,
                "scopes": key.scopes.sorted().map(\.rawValue).joined(separator: ", "),
                "limits": apps + (key.environment.map { " (\($0.name))" } ?? ""),
                "createdAt": Self.display(key.createdAt), "active": key.isUsable(at: now),
                "expired": key.isActive && key.isExpired(at: now), "revoked": !key.isActive,
                "lastUsedAt": key.lastUsedAt == nil ? "never" : Self.display(key.lastUsedAt),
                "revokedAt": Self.display(key.revokedAt), "csrf": context.consoleSession?.csrfToken ?? "",
            ]
            if let expiresAt = key.expiresAt { row["expiresAt"] = Self.display(expiresAt) }
            return row
        }
        var data = extra
        data["apps"] = appIDs
        let unscoped = stored.filter { $0.isUsable(at: now) && !$0.isScoped && !$0.allows(.admin) }
        if appIDs.count > 1, !unscoped.isEmpty {
            data["unscopedWarning"] =
                "This server has \(appIDs.count) apps, and \(unscoped.count) active key\(unscoped.count == 1 ? "" : "s") without apps (\(unscoped.map(\.name).sorted().joined(separator: ", "))) may send to all of them: make one key per app and revoke these."
        }
        data["keys"] = keys
        data["hasKeys"] = !keys.isEmpty
        return renderer.page("keys", title: "API keys", section: .keys, data: data, context: context, status: status)
    }

    @Sendable func createKey(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        try Self.access(context).requireUnscoped("making a key")
        let form = try await ConsoleForm.read(request, session: session)
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        let scopes = Set(form.all("scope").compactMap { value in APIKeyScope.known.first { $0.rawValue == value } })
        guard !name.isEmpty, name.utf8.count <= 200, !TextRules.hasControlCharacter(name) else {
            return try await keysPage(
                ["error": "A key needs a name of 1 to 200 bytes, such as “backend”."], context: context,
                status: .badRequest)
        }
        guard !scopes.isEmpty else {
            return try await keysPage(
                ["error": "Give the key at least one scope."], context: context, status: .badRequest)
        }
        let limits: APIKeyLimits
        do {
            limits = try APIKeyLimits(
                apps: form.all("app"), environment: form["environment"].flatMap { $0.isEmpty ? nil : $0 },
                expires: form["expires"].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 },
                now: clock.now())
        } catch {
            return try await keysPage(["error": error.message], context: context, status: .badRequest)
        }
        let created = try await store.createAPIKey(
            name: name, scopes: scopes, apps: limits.apps.intersection(appIDs), environment: limits.environment,
            expiresAt: limits.expiresAt, at: clock.now())
        context.logger.notice(
            "Console created an API key", metadata: [LogKey.apiKey: "\(created.key.name) \(created.key.prefix)…"])
        await audit.record(
            .keyCreated, context, app: created.key.apps.count == 1 ? created.key.apps.first : nil,
            subject: created.key.id.lowercasedText, detail: APIKeyLimits.describe(created.key))
        return try await keysPage(
            ["created": ["name": created.key.name, "secret": created.secret.value]], context: context,
            status: .created)
    }

    @Sendable func revokeKey(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let session = try Self.session(context)
        try Self.access(context).requireUnscoped("revoking a key")
        _ = try await ConsoleForm.read(request, session: session)
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw APIError(.notFound, reason: "unknownAPIKey", "There is no such API key: pick one from the list.")
        }
        if try await store.revokeAPIKey(id) {
            let name = try await store.apiKeys().first { $0.id == id }.map { "\($0.name) (\($0.prefix)…)" } ?? ""
            await audit.record(.keyRevoked, context, subject: id.lowercasedText, detail: name)
        }
        keys.forget(id)
        context.logger.notice("Console revoked an API key", metadata: [LogKey.apiKey: "\(id)"])
        return Self.redirect("/console/keys?revoked=1")
    }

    // MARK: Emulator

    @Sendable func emulatorInboxes(_ request: Request, context: ServerRequestContext) async throws -> Response {
        // The inboxes hold every app's devices.
        try Self.access(context).requireUnscoped("the emulator's inboxes")
        guard let emulator else {
            throw APIError(
                .notFound, reason: "noEmulator", "This server sends to APNs, not to the in-process emulator.")
        }
        let search = (try request.queryParameter("q") ?? "").lowercased().filter(\.isHexDigit)
        let matching = emulator.devices().filter { search.isEmpty || $0.token.hex.hasSuffix(search) }
            .sorted { $0.token.hex < $1.token.hex }
        let shown = matching.prefix(20)
        let devices: [[String: Any]] = shown.map { device in
            let entries = ((try? emulator.inbox(for: device.token)) ?? []).reversed()
            let rows: [[String: Any]] = entries.prefix(10).map { entry in
                [
                    "receivedAt": Self.display(entry.receivedAt), "pushType": entry.pushType ?? "—",
                    "payload": entry.payloadString,
                ]
            }
            return [
                "suffix": String(device.token.hex.suffix(8)), "environment": device.environment.name,
                "count": entries.count, "entries": rows, "hasEntries": !rows.isEmpty,
            ]
        }
        var data: [String: Any] = ["q": search, "devices": devices, "hasDevices": !devices.isEmpty]
        if matching.count > shown.count {
            data["more"] = "Showing 20 of \(matching.count) virtual devices: search by the last digits of a token."
        }
        return renderer.page("emulator", title: "Emulator", section: .emulator, data: data, context: context)
    }
}
