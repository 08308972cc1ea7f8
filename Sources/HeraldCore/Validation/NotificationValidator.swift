/// APNs' rules for a device push (apns-protocol.md §2 and §4.7), checked before anything is sent.
enum NotificationValidator {
    static func checkSize(_ size: Int, pushType: APNSPushType) throws(NotificationValidationError) {
        if size == 0 {
            throw NotificationValidationError(
                .payloadEmpty, field: "payload", reason: .payloadEmpty,
                message: "The payload is empty: send a JSON object such as {\"aps\":{\"alert\":\"Hello\"}}.")
        }
        let limit = pushType.maximumPayloadSize
        if size > limit {
            throw NotificationValidationError(
                .payloadTooLarge, field: "payload", reason: .payloadTooLarge,
                message: "The payload is \(size) bytes; APNs accepts at most \(limit) bytes for \(pushType) pushes: shorten the text or move data out of the payload.")
        }
    }

    static func checkHeaders(of notification: PushNotification) throws(NotificationValidationError) {
        try checkTopic(notification.topic, pushType: notification.pushType)
        let priority = notification.effectivePriority
        switch notification.pushType {
        case .background where priority != .considerPower:
            throw NotificationValidationError(
                .badPriority, field: "apns-priority", reason: .badPriority,
                message: "Background pushes must use priority 5, not \(priority): set the priority to 5.")
        case .liveactivity where priority == .prioritizePowerOver:
            throw NotificationValidationError(
                .badPriority, field: "apns-priority", reason: .badPriority,
                message: "Live Activity pushes use priority 10 or 5, not 1.")
        default:
            break
        }
        if let collapseID = notification.collapseID {
            let bytes = collapseID.utf8.count
            if bytes == 0 {
                throw NotificationValidationError(
                    .collapseIDEmpty, field: "apns-collapse-id", reason: .badCollapseID,
                    message: "apns-collapse-id is empty: leave it out, or give notifications that should replace each other the same id.")
            }
            if bytes > 64 {
                throw NotificationValidationError(
                    .collapseIDTooLong, field: "apns-collapse-id", reason: .badCollapseID,
                    message: "apns-collapse-id is \(bytes) bytes long; APNs allows at most 64 bytes of UTF-8: use a shorter id, such as a hash.")
            }
        }
    }

    static func checkTopic(_ topic: String, pushType: APNSPushType) throws(NotificationValidationError) {
        guard !topic.isEmpty else {
            throw NotificationValidationError(
                .missingTopic, field: "apns-topic", reason: .missingTopic,
                message: "apns-topic is required with token authentication: set it to the app's bundle id\(pushType.topicSuffix.map { $0.isEmpty ? "" : " plus \"\($0)\"" } ?? "").")
        }
        let allowed = topic.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        guard allowed, topic.utf8.count <= 255, !topic.hasPrefix("."), !topic.hasSuffix(".") else {
            throw NotificationValidationError(
                .badTopic, field: "apns-topic", reason: .badTopic,
                message: "\"\(topic)\" is not a bundle id: use letters, digits, '.', '-' and '_', like com.example.app.")
        }
        guard pushType.bundleID(fromTopic: topic) == nil else { return }
        let suffix = pushType.topicSuffix ?? ""
        if suffix.isEmpty, let implied = APNSPushType.impliedBySuffix(ofTopic: topic) {
            throw NotificationValidationError(
                .topicDoesNotMatchPushType, field: "apns-topic", reason: .deviceTokenNotForTopic,
                message: "The topic \"\(topic)\" is for \(implied) pushes, but the push type is \(pushType): drop the suffix \"\(implied.topicSuffix ?? "")\" or send with push type \(implied).")
        }
        throw NotificationValidationError(
            .topicDoesNotMatchPushType, field: "apns-topic", reason: .deviceTokenNotForTopic,
            message: "\(pushType) pushes need the topic <bundle id>\(suffix), but it is \"\(topic)\": use \"\(topic)\(suffix)\".")
    }

    static func checkPayload(_ payload: Payload, of notification: PushNotification) throws(NotificationValidationError) {
        let aps = payload.aps
        try checkRanges(aps, pushType: notification.pushType)
        switch notification.pushType {
        case .alert:
            if aps.isSilent {
                throw NotificationValidationError(
                    .pushTypeMismatch, field: "apns-push-type", reason: nil,
                    message: "This payload only has content-available, so it is a background push: send it with push type background and priority 5.")
            }
            guard aps.isVisible else {
                throw NotificationValidationError(
                    .nothingVisible, field: "aps", reason: nil,
                    message: "An alert push must show something: add an alert (title or body), a badge or a sound, or send a background push.")
            }
        case .background:
            if aps.isVisible {
                throw NotificationValidationError(
                    .pushTypeMismatch, field: "apns-push-type", reason: nil,
                    message: "A background push must not have an alert, badge or sound (the system drops it): send it as push type alert, or remove them.")
            }
            guard aps.contentAvailable else {
                throw NotificationValidationError(
                    .missingField, field: "aps.content-available", reason: nil,
                    message: "A background push needs \"content-available\": 1 to wake the app.")
            }
        case .liveactivity:
            try checkLiveActivity(aps)
        case .widgets, .controls:
            guard aps.contentChanged == true else {
                throw NotificationValidationError(
                    .missingField, field: "aps.content-changed", reason: nil,
                    message: "\(notification.pushType) pushes carry {\"aps\":{\"content-changed\":true}}.")
            }
        case .mdm:
            guard payload.custom["mdm"]?.stringValue?.isEmpty == false else {
                throw NotificationValidationError(
                    .missingField, field: "mdm", reason: nil,
                    message: "MDM pushes carry the device's PushMagic string: {\"mdm\":\"<PushMagic>\"}.")
            }
        case .complication, .fileprovider, .location, .pushtotalk, .voip:
            break
        }
        if notification.pushType != .liveactivity, aps.hasLiveActivityKeys {
            throw NotificationValidationError(
                .pushTypeMismatch, field: "apns-push-type", reason: nil,
                message: "The payload has Live Activity keys (event, timestamp, content-state…): send it with push type liveactivity to <bundle id>.push-type.liveactivity.")
        }
    }

    private static func checkRanges(_ aps: APS, pushType: APNSPushType) throws(NotificationValidationError) {
        if let badge = aps.badge, badge < 0 {
            throw NotificationValidationError(
                .valueOutOfRange, field: "aps.badge", reason: nil,
                message: "The badge is \(badge); it must be 0 (clears the badge) or more.")
        }
        try checkVolume(of: aps.sound, field: "aps.sound")
        if case .content(let content)? = aps.alert { try checkVolume(of: content.sound, field: "aps.alert.sound") }
        if let score = aps.relevanceScore {
            if !score.isFinite {
                throw NotificationValidationError(
                    .valueOutOfRange, field: "aps.relevance-score", reason: nil, message: "The relevance score must be a finite number.")
            }
            if pushType != .liveactivity, !(0...1).contains(score) {
                throw NotificationValidationError(
                    .valueOutOfRange, field: "aps.relevance-score", reason: nil,
                    message: "The relevance score is \(score); for notifications it must be between 0 and 1 (only Live Activities use other numbers).")
            }
        }
    }

    private static func checkVolume(of sound: Sound?, field: String) throws(NotificationValidationError) {
        if case .critical(let critical)? = sound, let volume = critical.volume, !(0...1).contains(volume) {
            throw NotificationValidationError(
                .valueOutOfRange, field: "\(field).volume", reason: nil,
                message: "The critical sound volume is \(volume); it must be between 0.0 (silent) and 1.0 (full).")
        }
    }

    /// A date past this is milliseconds since 1970 (this many seconds is the year 5138).
    static let millisecondsThreshold = 100_000_000_000

    /// Live Activity dates are whole seconds since 1970. One in milliseconds is a date thousands of years away: a
    /// `timestamp` so far ahead makes the device take every later update (in seconds) as older and drop it, and a
    /// `stale-date` or `dismissal-date` never comes. A past `dismissal-date` is allowed: it removes the ended activity
    /// at once, as Apple documents.
    private static func checkLiveActivityDates(_ aps: APS) throws(NotificationValidationError) {
        for (key, value) in [("timestamp", aps.timestamp), ("stale-date", aps.staleDate), ("dismissal-date", aps.dismissalDate)] {
            guard let value else { continue }
            if value < 0 {
                throw NotificationValidationError(
                    .valueOutOfRange, field: "aps.\(key)", reason: nil,
                    message: "\(key) is \(value): give seconds since 1970, such as \(1_767_225_600).")
            }
            if value >= millisecondsThreshold {
                throw NotificationValidationError(
                    .valueOutOfRange, field: "aps.\(key)", reason: nil,
                    message: "\(key) is \(value), which is milliseconds since 1970: Live Activity dates are seconds (\(value / 1000)). In milliseconds it lies thousands of years ahead\(key == "timestamp" ? ", and the device drops every later update as older" : ", and never comes").")
            }
        }
    }

    static func checkLiveActivity(_ aps: APS) throws(NotificationValidationError) {
        func missing(_ key: String, _ why: String) -> NotificationValidationError {
            NotificationValidationError(.liveActivity, field: "aps.\(key)", reason: nil, message: why)
        }
        guard let event = aps.event else {
            throw missing("event", "A Live Activity push needs \"event\": start, update or end.")
        }
        guard aps.timestamp != nil else {
            throw missing("timestamp", "A Live Activity push needs \"timestamp\": the time of the update in seconds since 1970 (the device keeps the newest).")
        }
        guard aps.contentState != nil else {
            throw missing("content-state", "A Live Activity \(event.rawValue) needs \"content-state\" matching the app's ContentState.")
        }
        if event == .start {
            guard aps.attributesType != nil else {
                throw missing("attributes-type", "Starting a Live Activity needs \"attributes-type\": the name of the app's ActivityAttributes type.")
            }
            guard aps.attributes != nil else {
                throw missing("attributes", "Starting a Live Activity needs \"attributes\": the activity's static attributes.")
            }
            guard let alert = aps.alert, !alert.isEmpty else {
                throw missing("alert", "Starting a Live Activity needs an alert with a title and body.")
            }
        } else {
            if aps.attributesType != nil || aps.attributes != nil || aps.inputPushToken || aps.inputPushChannel != nil {
                throw missing("event", "attributes-type, attributes, input-push-token and input-push-channel only go with event \"start\".")
            }
        }
        if aps.dismissalDate != nil, event != .end {
            throw missing("dismissal-date", "dismissal-date only goes with event \"end\".")
        }
        try checkLiveActivityDates(aps)
        if let stale = aps.staleDate, let timestamp = aps.timestamp, stale <= timestamp, event != .end {
            throw missing(
                "stale-date",
                "stale-date (\(stale)) is not after the push's timestamp (\(timestamp)): the device would show the activity out of date the moment it arrives. Give the time its content goes stale, in seconds since 1970.")
        }
        if let type = aps.attributesType, type.isEmpty || type.contains(where: { $0.isWhitespace || $0.isNewline }) {
            throw missing(
                "attributes-type",
                "attributes-type is \"\(type)\": name the app's ActivityAttributes type as Swift spells it, such as DeliveryAttributes; ActivityKit starts nothing for a name it does not know.")
        }
        if case .content(let content)? = aps.alert, content.sound != nil, content.title?.isEmpty ?? true,
            content.titleLocKey == nil
        {
            throw missing(
                "alert.title",
                "A Live Activity alert with a sound needs a title (and a body): the system's Live Activity alert is a title, a body and an optional sound.")
        }
        if aps.inputPushToken, aps.inputPushChannel != nil {
            throw missing("input-push-channel", "Ask for either an update token (input-push-token) or a channel (input-push-channel), not both.")
        }
    }
}
