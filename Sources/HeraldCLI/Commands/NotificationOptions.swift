import ArgumentParser
import Foundation
import HeraldCore

/// The notification flags `herald send` and `herald simulator-file` share: a payload from typed fields, a JSON
/// file or standard input, plus the APNs headers.
struct NotificationOptions: ParsableArguments {
    @Option(help: "The app's bundle id; the push type's suffix is added when missing (e.g. .voip).") var topic: String

    @Option(help: "Alert title.") var title: String?
    @Option(help: "Alert subtitle.") var subtitle: String?
    @Option(help: "Alert body.") var body: String?
    @Option(help: "App icon badge (0 clears it).") var badge: Int?
    @Option(help: "Sound file name, or \"default\".") var sound: String?
    @Option(help: "Notification category (selects action buttons).") var category: String?
    @Option(help: "Thread id (groups notifications).") var threadID: String?
    @Flag(help: "Set content-available: 1 (a silent background push when nothing else is set).") var contentAvailable = false
    @Flag(help: "Set mutable-content: 1 (runs the app's notification service extension).") var mutableContent = false
    @Option(name: .customLong("custom"), help: "A custom key beside aps: KEY=VALUE, VALUE as JSON or plain text (repeatable).")
    var customKeys: [String] = []
    @Option(help: "Payload JSON file (\"-\" reads standard input); replaces the typed fields.") var payload: String?
    @Option(help: "Live Activity event: update or end (start needs --payload); the timestamp is now. Sets push type liveactivity.")
    var event: String?
    @Option(help: "Live Activity content-state: a JSON object matching the app's ContentState.") var contentState: String?

    @Option(help: "apns-push-type: alert, background, voip, liveactivity, … (default: alert, or background for a silent push).")
    var pushType: String?
    @Option(help: "apns-priority: 10, 5 or 1 (default: 5 for background pushes, else APNs' default 10).") var priority: Int?
    @Option(help: "apns-collapse-id (at most 64 bytes).") var collapseID: String?
    @Option(help: "apns-expiration: 0 (deliver once), a UNIX time in seconds, or a duration from now such as 1h or 30m.")
    var expiration: String?
    @Option(help: "apns-id (a UUID; generated when absent).") var apnsID: String?

    /// The notification the flags describe, validated.
    func notification(now: Date = Date()) throws -> PushNotification {
        let body: PushNotification.Body
        if let payload {
            let data: Data
            if payload == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                guard let file = FileManager.default.contents(atPath: payload) else {
                    throw ValidationError("Cannot read the payload file \(payload).")
                }
                data = file
            }
            body = .raw(Array(data))
        } else {
            body = .payload(try typedPayload(now: now))
        }
        let type: APNSPushType
        if let pushType {
            guard let parsed = APNSPushType(headerValue: pushType) else {
                throw ValidationError("--push-type \(pushType) is not an APNs push type: use one of \(APNSPushType.allCases.map(\.rawValue).joined(separator: ", ")).")
            }
            type = parsed
        } else if event != nil {
            type = .liveactivity
        } else if case .payload(let typed) = body, typed.aps.isSilent {
            type = .background
        } else {
            type = .alert
        }
        var resolvedPriority: APNSPriority?
        if let priority {
            guard let parsed = APNSPriority(rawValue: priority) else { throw ValidationError("--priority is 10, 5 or 1.") }
            resolvedPriority = parsed
        } else if type == .background {
            resolvedPriority = .considerPower
        }
        let resolvedTopic = type.topicSuffix.map { !$0.isEmpty && !topic.hasSuffix($0) ? topic + $0 : topic } ?? topic
        var resolvedID: APNSID?
        if let apnsID {
            guard let parsed = APNSID(headerValue: apnsID) else { throw ValidationError("--apns-id must be a UUID (8-4-4-4-12 hex digits).") }
            resolvedID = parsed
        }
        return PushNotification(
            body: body, pushType: type, topic: resolvedTopic, priority: resolvedPriority,
            expiration: try expiration.map { try Self.parseExpiration($0, now: now) }, collapseID: collapseID, apnsID: resolvedID)
    }

    private func typedPayload(now: Date) throws -> Payload {
        var alert = AlertContent()
        if let title { alert.title = .text(title) }
        if let subtitle { alert.subtitle = .text(subtitle) }
        if let body { alert.body = .text(body) }
        var payload = Payload(aps: APS(
            alert: alert.isEmpty ? nil : .content(alert), badge: badge, sound: sound.map { .named($0) }, threadID: threadID,
            category: category, contentAvailable: contentAvailable, mutableContent: mutableContent))
        for entry in customKeys {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                throw ValidationError("--custom \(entry): use KEY=VALUE, e.g. --custom orderID=A-1042 or --custom 'coords={\"lat\":1}'.")
            }
            let key = String(entry[..<equals])
            guard key != "aps" else { throw ValidationError("--custom cannot set aps; use the typed flags or --payload.") }
            let text = String(entry[entry.index(after: equals)...])
            payload.custom[key] = (try? JSONValue(parsing: text)) ?? .string(text)
        }
        if let event {
            guard let parsed = LiveActivityEvent(rawValue: event), parsed != .start else {
                throw ValidationError("--event \(event): use update or end (a start needs attributes: give a --payload file).")
            }
            payload.aps.event = parsed
            payload.aps.timestamp = Int(now.timeIntervalSince1970)
            if let contentState {
                guard case .object(let state)? = try? JSONValue(parsing: Array(contentState.utf8)) else {
                    throw ValidationError("--content-state must be a JSON object, e.g. '{\"score\":\"2-1\"}'.")
                }
                payload.aps.contentState = state
            }
        } else if contentState != nil {
            throw ValidationError("--content-state goes with --event update or end.")
        }
        if alert.isEmpty, badge == nil, sound == nil, !contentAvailable, payload.custom.isEmpty, event == nil {
            throw ValidationError("Nothing to send: give --title/--body (or --badge, --sound, --content-available, --event), or --payload FILE.")
        }
        return payload
    }

    static func parseExpiration(_ text: String, now: Date) throws -> APNSExpiration {
        if let seconds = Int(text), seconds >= 0 {
            // A small number is almost surely meant as a duration: APNs reads it as a date in 1970, already past.
            guard seconds == 0 || seconds > 1_000_000_000 else {
                throw ValidationError("--expiration \(text) is a UNIX time in 1970 (already past): use a duration such as \(text)s, or 0 to deliver once.")
            }
            return APNSExpiration(secondsSince1970: seconds)
        }
        let units: [(String, Int)] = [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)]
        for (suffix, multiplier) in units where text.hasSuffix(suffix) {
            if let amount = Int(text.dropLast(suffix.count)), amount > 0 {
                return .after(.seconds(amount * multiplier), from: now)
            }
        }
        throw ValidationError("--expiration \(text): use 0, a UNIX time in seconds, or a duration such as 30m, 1h, 2d.")
    }
}
