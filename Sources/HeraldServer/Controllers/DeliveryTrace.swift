import Foundation
import HeraldCore
import HeraldSending
import HeraldStore

/// One notification's way to one device, joined from what Herald keeps of it: the send, the device's outcome and its
/// attempts, the receipt events the device reported and the token's removal (docs/delivery-trace.md). What
/// `GET /api/sends/{id}/devices/{token}` answers and the console's delivery page shows.
struct DeliveryTrace {
    /// One step. Steps are in the order things happened to the notification, not sorted by their times: an inline
    /// send's record is written after its attempts, and receipt events carry the device's clock.
    struct Step {
        /// What happened: `accepted`, `attempt`, `environmentCorrected`, `tokenRemoved`, `tokenKept`, `received`,
        /// `opened`, `action`, `dismissed`, `quietHoursDeferred`, `quietHoursDropped`, `frequencyCapped`, `pending`,
        /// `activityStarted`, `activityNotStarted` or `tokenStale`.
        var event: String
        var at: Date
        /// In plain words, for people.
        var text: String
        /// The event's own fields, for programs (`number`, `httpStatus`, `reason`, `apnsUniqueId`, …).
        var fields: [String: JSONValue] = [:]
    }

    /// A verdict in plain words, and its code for programs.
    struct Verdict {
        /// `pending`, `notTargeted`, `failed`, `rejected`, `removed`, `acceptedNotReported`, `received`, `opened`,
        /// `activityStarted`, `activityNotStarted`.
        var code: String
        var text: String
    }

    let send: SendRecord
    let token: DeviceToken
    let outcome: DeliveryOutcome?
    let steps: [Step]
    let verdict: Verdict

    /// Apple's Push Notifications Console, where a development notification is looked up by its `apns-unique-id`.
    static let pushNotificationsConsole = "https://icloud.developer.apple.com/dashboard/notifications"

    /// A frequency cap that left the device out: the cap, and the count its person had reached in the window.
    struct CapEvidence {
        var cap: FrequencyCap
        var count: Int
    }

    init(
        send: SendRecord, token: DeviceToken, stored: StoredDeliveryTrace, device: DeviceRegistration?,
        frequencyCap: CapEvidence? = nil, ownQuietHours: OwnQuietHours? = nil
    ) {
        self.send = send
        self.token = token
        outcome = stored.outcome
        // An inline send is recorded once sent: it was accepted no later than its first attempt.
        let firstAttempt = stored.outcome.map { $0.attempts.first?.at ?? $0.at }
        var steps = [
            Step(
                event: "accepted", at: min(send.createdAt, firstAttempt ?? send.createdAt),
                text: "Herald accepted the send: the request was valid, the payload passed every APNs check, and its "
                    + "target (\(send.target)) was resolved to devices.")
        ]
        let quiet = Self.quietVerdict(send: send, device: device, ownQuietHours: ownQuietHours)
        if let step = Self.quietHoursStep(quiet) { steps.append(step) }
        if let outcome = stored.outcome {
            steps += Self.attemptSteps(outcome)
            switch outcome.action {
            case .environmentCorrected?:
                steps.append(
                    Step(
                        event: "environmentCorrected", at: outcome.at,
                        text: "The token's environment was corrected to \(outcome.environment.name): its "
                            + "registration said \(outcome.environment.other.name), whose host answered BadDeviceToken.",
                        fields: ["environment": .string(outcome.environment.name)]))
            case .removed?:
                steps.append(
                    Step(
                        event: "tokenRemoved", at: outcome.at,
                        text: "Herald removed the token from sends: APNs said it is no longer valid.",
                        fields: Self.reasonField(outcome)))
            case .kept?:
                steps.append(
                    Step(
                        event: "tokenKept", at: outcome.at,
                        text: "Herald kept the token: the app registered it again after APNs's timestamp.",
                        fields: Self.reasonField(outcome)))
            case nil:
                break
            }
        } else if let frequencyCap {
            steps.append(
                Step(
                    event: "frequencyCapped", at: send.updatedAt,
                    text: "Left out by the frequency cap \(frequencyCap.cap): this device's person had had "
                        + "\(frequencyCap.count) in its window, and other sends counted them.",
                    fields: ["cap": .string(frequencyCap.cap.description), "count": .integer(frequencyCap.count)]))
        } else if !send.status.isFinal {
            steps.append(
                Step(
                    event: "pending", at: send.updatedAt,
                    text: "Not sent to this device yet: the send is \(send.status.rawValue)."))
        }
        for receipt in stored.receipts {
            var fields: [String: JSONValue] = ["recordedAt": .string(RFC3339.string(receipt.recordedAt))]
            if let action = receipt.action { fields["action"] = .string(action) }
            steps.append(Step(event: receipt.kind.rawValue, at: receipt.at, text: Self.words(receipt), fields: fields))
        }
        switch stored.activityStart {
        case .started(let checkedAt)?:
            steps.append(
                Step(
                    event: "activityStarted", at: checkedAt,
                    text: "The push-to-start started the Live Activity: the app registered an update token of it."))
        case .notStarted(let checkedAt)?:
            steps.append(
                Step(
                    event: "activityNotStarted", at: checkedAt,
                    text: "The push-to-start started nothing: APNs accepted it, and the app registered no update token "
                        + "of the activity in the time the check allows."))
        case .pending?, nil:
            break
        }
        if let stale = device?.staleSince, stale >= send.createdAt {
            steps.append(
                Step(
                    event: "tokenStale", at: stale,
                    text: "Herald left the push-to-start token out of sends: its starts started nothing several times "
                        + "in a row. A new token from the app brings the device back."))
        }
        if let invalidation = device?.invalidation, stored.outcome?.action != .removed,
            invalidation.recordedAt >= send.createdAt
        {
            steps.append(
                Step(
                    event: "tokenRemoved", at: invalidation.recordedAt,
                    text: "Later, Herald removed the token from sends: APNs answered \(invalidation.reason.rawValue) "
                        + "to another notification.",
                    fields: ["reason": .string(invalidation.reason.rawValue)]))
        }
        self.steps = steps
        if case .dropped = quiet, stored.outcome == nil {
            verdict = Verdict(
                code: "quietHoursDropped",
                text: "Not sent: the device was in its quiet hours when the send reached it, and the send drops such "
                    + "devices (\"quietHours\": \"drop\"). Send with \"defer\" to reach them when their window ends.")
        } else if let frequencyCap, stored.outcome == nil {
            verdict = Verdict(
                code: "frequencyCapped",
                text: "Herald left this device out: its person had had as many notifications as the frequency cap "
                    + "\(frequencyCap.cap) allows in its window (docs/preferences.md).")
        } else {
            verdict = Self.verdict(send: send, stored: stored)
        }
    }

    /// The cap that left a device without an outcome out of a finished send that the caps left devices out of: one of
    /// the send's caps (its stored job's; an inline send keeps none, so the app's caps of the moment) whose counter for
    /// the device's person, in the window the send was accepted in, is full and was counted by other sends. `nil`
    /// when the device has an outcome, or no cap is full.
    static func frequencyCapEvidence(
        send: SendRecord, stored: StoredDeliveryTrace, device: DeviceRegistration?, appCaps: [FrequencyCap],
        store: any Store
    ) async throws -> CapEvidence? {
        guard stored.outcome == nil, send.status.isFinal, send.suppressed.frequencyCap > 0, let device else { return nil }
        var caps = appCaps
        if let job = send.job, let texts = (try? JSONValue(parsing: job))?["frequencyCaps"]?.arrayValue {
            caps = texts.compactMap { $0.stringValue.flatMap { try? FrequencyCap(parsing: $0) } }
        }
        guard !caps.isEmpty else { return nil }
        let counters = try await store.frequencyCapCounters(
            caps, topic: device.topic, subject: PreferenceSubject(of: device.registration).key, at: send.createdAt)
        for (cap, counter) in zip(caps, counters) {
            if let counter, counter.count >= cap.limit, counter.lastSend != send.id {
                return CapEvidence(cap: cap, count: counter.count)
            }
        }
        return nil
    }

    /// What the send's quiet-hours rule did to this device, from the send's stored job, the device's registered
    /// time zone and its person's own quiet hours (today's: a zone or window changed since is not the one the send
    /// saw).
    private static func quietVerdict(send: SendRecord, device: DeviceRegistration?, ownQuietHours: OwnQuietHours?)
        -> SendTimetable.QuietVerdict
    {
        guard let text = send.job, let device, case .send(let job)? = try? StoredJob(jsonText: text, sendID: send.id),
            job.quietHours != nil, job.bundleID == device.topic
        else { return .notQuiet }
        return SendTimetable(schedule: job.schedule, quietHours: job.quietHours)
            .quietVerdict(zone: device.timeZone, ownQuietHours: ownQuietHours)
    }

    /// The own quiet hours of a device's person (`nil`: none, or no device), for ``quietVerdict``.
    static func ownQuietHours(of device: DeviceRegistration?, store: any Store) async throws -> OwnQuietHours? {
        guard let device else { return nil }
        return try await store.preferences(topic: device.topic, subject: PreferenceSubject(of: device.registration))
            .quietHours
    }

    private static func quietHoursStep(_ verdict: SendTimetable.QuietVerdict) -> Step? {
        switch verdict {
        case .notQuiet:
            return nil
        case .deferred(let at, let until):
            return Step(
                event: "quietHoursDeferred", at: at,
                text: "The device was in its quiet hours when the send reached it: deferred to the end of its window, "
                    + "\(RFC3339.string(until)).",
                fields: ["until": .string(RFC3339.string(until))])
        case .dropped(let at):
            return Step(
                event: "quietHoursDropped", at: at,
                text: "The device was in its quiet hours when the send reached it, and the send drops such devices.")
        }
    }

    /// The `apns-unique-id` to paste into Apple's Push Notifications Console: development sends only (the sandbox
    /// gives one; production does not).
    var apnsUniqueID: String? {
        guard let outcome, outcome.environment == .development else { return nil }
        return outcome.apnsUniqueID ?? outcome.attempts.last(where: { $0.apnsUniqueID != nil })?.apnsUniqueID
    }

    /// The attempts: stored ones when there were several, else the one the outcome row describes.
    private static func attemptSteps(_ outcome: DeliveryOutcome) -> [Step] {
        guard !outcome.attempts.isEmpty else {
            var single = DeliveryAttempt(number: 1, at: outcome.at, environment: outcome.environment)
            switch outcome.result {
            case .accepted: single.status = 200
            case .rejected(let status, let reason, _):
                single.status = status
                single.reason = reason.rawValue
            case .failed(let message): single.message = message
            }
            single.apnsUniqueID = outcome.apnsUniqueID
            return [step(single, apnsID: outcome.result.apnsID, last: true)]
        }
        return outcome.attempts.enumerated().map { index, attempt in
            step(attempt, apnsID: outcome.result.apnsID, last: index == outcome.attempts.count - 1)
        }
    }

    private static func step(_ attempt: DeliveryAttempt, apnsID: APNSID?, last: Bool) -> Step {
        var fields: [String: JSONValue] = [
            "number": .integer(attempt.number), "environment": .string(attempt.environment.name),
        ]
        if let connection = attempt.connection { fields["connection"] = .integer(connection) }
        if let status = attempt.status { fields["httpStatus"] = .integer(status) }
        if let reason = attempt.reason { fields["reason"] = .string(reason) }
        if let message = attempt.message { fields["message"] = .string(message) }
        if let unique = attempt.apnsUniqueID { fields["apnsUniqueId"] = .string(unique) }
        if let apnsID, attempt.isAccepted { fields["apnsId"] = .string(apnsID.headerValue) }
        var text = "Attempt \(attempt.number) to APNs (\(attempt.environment.name)"
        text += attempt.connection.map { ", connection \($0)): " } ?? "): "
        switch (attempt.status, attempt.reason) {
        case (200?, _): text += "accepted"
        case (let status?, let reason): text += "answered \(status) \(reason ?? "")"
        case (nil, _): text += "no answer: \(attempt.message ?? attempt.reason ?? "the connection failed")"
        }
        if let delay = attempt.retryAfter {
            let milliseconds = Int(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
            fields["retryAfterMs"] = .integer(milliseconds)
            text += delay == .zero ? "; retried at once" : "; retried after \(milliseconds) ms"
            if attempt.status == nil { text += " (no answer is safe to repeat: APNs drops duplicates of one apns-id)" }
        } else if !last, attempt.status != 200 {
            text += "; tried in the other environment"
        }
        return Step(event: "attempt", at: attempt.at, text: text + ".", fields: fields)
    }

    private static func reasonField(_ outcome: DeliveryOutcome) -> [String: JSONValue] {
        if case .rejected(_, let reason, _) = outcome.result { return ["reason": .string(reason.rawValue)] }
        return [:]
    }

    private static func words(_ receipt: TracedReceipt) -> String {
        switch receipt.kind {
        case .received: "The device reported it received the notification (the app's service extension)."
        case .opened: "The user opened the notification."
        case .action: "The user chose the action \(receipt.action ?? "")."
        case .dismissed: "The user dismissed the notification."
        }
    }

    private static func verdict(send: SendRecord, stored: StoredDeliveryTrace) -> Verdict {
        guard let outcome = stored.outcome else {
            if !send.status.isFinal {
                return Verdict(
                    code: "pending",
                    text: "Herald has not sent it to this device yet: the send is \(send.status.rawValue). Look again "
                        + "once it has run.")
            }
            return Verdict(
                code: "notTargeted",
                text: "The send never went to this device: its target (\(send.target)) did not include it when it ran "
                    + "(registered later, another app, another environment's filter, or removed from sends), or the "
                    + "send was cancelled first.")
        }
        var prefix = ""
        if outcome.action == .environmentCorrected {
            prefix = "The \(outcome.environment.other.name) host answered BadDeviceToken and the "
                + "\(outcome.environment.name) host accepted it, so Herald corrected the token's environment. "
        } else if outcome.attempts.count > 1 {
            prefix = "It took \(outcome.attempts.count) attempts. "
        }
        switch outcome.result {
        case .failed(let message):
            return Verdict(
                code: "failed",
                text: prefix + "APNs never took it, so it was not delivered: \(message) Send it again once APNs is "
                    + "reachable.")
        case .rejected(let status, let reason, _):
            if outcome.action == .removed {
                let why =
                    reason == .badDeviceToken
                    ? "both hosts answered BadDeviceToken: the token is not a valid APNs token for this app"
                    : "APNs answered \(status) \(reason.rawValue): the app was uninstalled or the token expired"
                return Verdict(
                    code: "removed",
                    text: prefix + "Not delivered: \(why). Herald removed the token; the app registers a new one "
                        + "when it runs again.")
            }
            return Verdict(
                code: "rejected",
                text: prefix + "Not delivered: APNs refused it with \(status) \(reason.rawValue). "
                    + "docs/server.md lists what each reason means and what to do.")
        case .accepted:
            switch stored.activityStart {
            case .started?:
                return Verdict(
                    code: "activityStarted",
                    text: prefix + "Delivered: the push-to-start started the Live Activity, whose app registered its "
                        + "update token.")
            case .notStarted?:
                return Verdict(
                    code: "activityNotStarted",
                    text: prefix + "APNs accepted the push-to-start, and it started nothing: the app registered no "
                        + "update token of the activity. APNs answers 200 to a push-to-start token the device no longer "
                        + "honours; after several such in a row Herald marks the token stale (docs/live-activities.md).")
            case .pending?, nil:
                break
            }
            let kinds = Set(stored.receipts.map(\.kind))
            if kinds.contains(.opened) || kinds.contains(.action) {
                return Verdict(
                    code: "opened", text: prefix + "Delivered and opened: the device reported it, and the user opened it.")
            }
            if !kinds.isEmpty {
                return Verdict(
                    code: "received",
                    text: prefix + "Delivered: the device reported it received it. The user has not opened it (or "
                        + "the app does not report opens).")
            }
            var text = prefix + "APNs accepted it; the device never reported it: it may be offline (APNs keeps the "
                + "latest notification per app for a while), notifications may be off, or the app lacks the service "
                + "extension that reports receipts."
            if outcome.environment == .development, outcome.apnsUniqueID != nil {
                text += " Paste its apns-unique-id into Apple's Push Notifications Console (Delivery Log) to see what "
                    + "APNs did with it."
            }
            return Verdict(code: "acceptedNotReported", text: text)
        }
    }

    /// The trace as the API answers it.
    func json(revealingToken: Bool) -> JSONValue {
        var members: [String: JSONValue] = [
            "send": .object([
                "id": .string(send.id.description), "status": .string(send.status.rawValue),
                "target": .string(send.target), "summary": .string(send.summary),
                "createdAt": .string(RFC3339.string(send.createdAt)),
            ]),
            "token": .string(revealingToken ? token.hex : token.redacted),
            "verdict": .object(["code": .string(verdict.code), "text": .string(verdict.text)]),
            "timeline": .array(
                steps.map { step in
                    var fields = step.fields
                    fields["event"] = .string(step.event)
                    fields["at"] = .string(RFC3339.string(step.at))
                    fields["text"] = .string(step.text)
                    return .object(fields)
                }),
        ]
        if let outcome {
            members["environment"] = .string(outcome.environment.name)
            members["status"] = .string(outcome.result.kind)
            members["attempts"] = .integer(max(1, outcome.attempts.count))
            if let apnsID = outcome.result.apnsID { members["apnsId"] = .string(apnsID.headerValue) }
        }
        if let unique = apnsUniqueID {
            members["apnsUniqueId"] = .string(unique)
            members["pushNotificationsConsole"] = .string(Self.pushNotificationsConsole)
        }
        return .object(members)
    }
}

extension DeliveryOutcome.Result {
    /// The `apns-id` APNs accepted it with.
    var apnsID: APNSID? {
        if case .accepted(let id) = self { return id }
        return nil
    }
}
