extension Payload {
    /// The compact JSON body: `aps` first, then the custom keys.
    public func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        if includesAPS || !aps.isEmptyDictionary {
            writer.key("aps")
            aps.write(to: &writer)
        }
        writer.members(custom)
        writer.endObject()
        return writer.bytes
    }

    /// The compact JSON body as text.
    public var jsonString: String { String(decoding: jsonBytes(), as: UTF8.self) }

    /// Decodes a JSON object into the typed model.
    /// - Throws: ``NotificationValidationError`` when the text is not JSON, not an object, or a known key has the
    ///   wrong type (`"badge": "3"`), naming the field.
    public init(jsonBytes: some Collection<UInt8>) throws(NotificationValidationError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: jsonBytes)
        } catch {
            throw NotificationValidationError(
                .payloadNotJSON, field: "payload", reason: .badRequestPayload,
                message: "The payload is not valid JSON (\(error.description)): send a JSON object such as {\"aps\":{\"alert\":\"Hello\"}}.")
        }
        try self.init(json: value)
    }

    /// Decodes a JSON string into the typed model.
    public init(jsonString: String) throws(NotificationValidationError) {
        try self.init(jsonBytes: Array(jsonString.utf8))
    }

    /// Decodes a parsed JSON value into the typed model.
    public init(json: JSONValue) throws(NotificationValidationError) {
        guard case .object(var members) = json else {
            throw NotificationValidationError(
                .payloadNotObject, field: "payload", reason: .badRequestPayload,
                message: "The payload is \(json.typeName), but APNs needs a JSON object with an aps dictionary.")
        }
        if let apsValue = members.removeValue(forKey: "aps") {
            guard case .object(let apsMembers) = apsValue else {
                throw FieldReader.typeError("aps", expected: "an object", got: apsValue)
            }
            self.init(aps: try APS(members: apsMembers), custom: members, includesAPS: true)
        } else {
            self.init(aps: APS(), custom: members, includesAPS: false)
        }
    }
}

extension APS {
    var isEmptyDictionary: Bool { self == APS() }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        if let alert {
            writer.key("alert")
            switch alert {
            case .body(let text): writer.string(text)
            case .content(let content): content.write(to: &writer)
            }
        }
        if let badge { writer.key("badge"); writer.integer(badge) }
        if let sound { writer.key("sound"); sound.write(to: &writer) }
        if let threadID { writer.key("thread-id"); writer.string(threadID) }
        if let category { writer.key("category"); writer.string(category) }
        if contentAvailable { writer.key("content-available"); writer.integer(1) }
        if mutableContent { writer.key("mutable-content"); writer.integer(1) }
        if let targetContentID { writer.key("target-content-id"); writer.string(targetContentID) }
        if let interruptionLevel { writer.key("interruption-level"); writer.string(interruptionLevel.rawValue) }
        if let relevanceScore { writer.key("relevance-score"); writer.decimal(relevanceScore) }
        if let filterCriteria { writer.key("filter-criteria"); writer.string(filterCriteria) }
        if let event { writer.key("event"); writer.string(event.rawValue) }
        if let timestamp { writer.key("timestamp"); writer.integer(timestamp) }
        if let contentState { writer.key("content-state"); writer.write(.object(contentState)) }
        if let staleDate { writer.key("stale-date"); writer.integer(staleDate) }
        if let dismissalDate { writer.key("dismissal-date"); writer.integer(dismissalDate) }
        if let attributesType { writer.key("attributes-type"); writer.string(attributesType) }
        if let attributes { writer.key("attributes"); writer.write(.object(attributes)) }
        if inputPushToken { writer.key("input-push-token"); writer.integer(1) }
        if let inputPushChannel { writer.key("input-push-channel"); writer.string(inputPushChannel) }
        if let contentChanged { writer.key("content-changed"); writer.bool(contentChanged) }
        if let urlArgs { writer.key("url-args"); writer.stringArray(urlArgs) }
        writer.members(additional)
        writer.endObject()
    }

    init(members: [String: JSONValue]) throws(NotificationValidationError) {
        var reader = FieldReader(members: members, path: "aps")
        self.init()
        if let value = reader.take("alert") {
            switch value {
            case .string(let text): alert = .body(text)
            case .object(let alertMembers): alert = .content(try AlertContent(members: alertMembers))
            default: throw FieldReader.typeError("aps.alert", expected: "a string or an object", got: value)
            }
        }
        badge = try reader.integer("badge")
        if let value = reader.take("sound") { sound = try Sound(json: value, path: "aps.sound") }
        threadID = try reader.string("thread-id")
        category = try reader.string("category")
        contentAvailable = try reader.flag("content-available")
        mutableContent = try reader.flag("mutable-content")
        targetContentID = try reader.string("target-content-id")
        interruptionLevel = try reader.choice(
            "interruption-level", InterruptionLevel.self, "an interruption level: use passive, active, time-sensitive or critical")
        relevanceScore = try reader.number("relevance-score")
        filterCriteria = try reader.string("filter-criteria")
        event = try reader.choice("event", LiveActivityEvent.self, "a Live Activity event: use start, update or end")
        timestamp = try reader.integer("timestamp")
        contentState = try reader.object("content-state")
        staleDate = try reader.integer("stale-date")
        dismissalDate = try reader.integer("dismissal-date")
        attributesType = try reader.string("attributes-type")
        attributes = try reader.object("attributes")
        inputPushToken = try reader.flag("input-push-token")
        inputPushChannel = try reader.string("input-push-channel")
        contentChanged = try reader.bool("content-changed")
        urlArgs = try reader.strings("url-args")
        additional = reader.remaining
    }
}

extension AlertContent {
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        if let title { writer.key("title"); title.write(to: &writer) }
        if let subtitle { writer.key("subtitle"); subtitle.write(to: &writer) }
        if let body { writer.key("body"); body.write(to: &writer) }
        if let launchImage { writer.key("launch-image"); writer.string(launchImage) }
        if let titleLocKey { writer.key("title-loc-key"); writer.string(titleLocKey) }
        if let titleLocArgs { writer.key("title-loc-args"); writer.stringArray(titleLocArgs) }
        if let subtitleLocKey { writer.key("subtitle-loc-key"); writer.string(subtitleLocKey) }
        if let subtitleLocArgs { writer.key("subtitle-loc-args"); writer.stringArray(subtitleLocArgs) }
        if let locKey { writer.key("loc-key"); writer.string(locKey) }
        if let locArgs { writer.key("loc-args"); writer.stringArray(locArgs) }
        if let sound { writer.key("sound"); sound.write(to: &writer) }
        writer.members(additional)
        writer.endObject()
    }

    init(members: [String: JSONValue]) throws(NotificationValidationError) {
        var reader = FieldReader(members: members, path: "aps.alert")
        self.init()
        title = try reader.alertText("title")
        subtitle = try reader.alertText("subtitle")
        body = try reader.alertText("body")
        launchImage = try reader.string("launch-image")
        titleLocKey = try reader.string("title-loc-key")
        titleLocArgs = try reader.strings("title-loc-args")
        subtitleLocKey = try reader.string("subtitle-loc-key")
        subtitleLocArgs = try reader.strings("subtitle-loc-args")
        locKey = try reader.string("loc-key")
        locArgs = try reader.strings("loc-args")
        if let value = reader.take("sound") { sound = try Sound(json: value, path: "aps.alert.sound") }
        additional = reader.remaining
    }
}

extension AlertText {
    func write(to writer: inout JSONWriter) {
        switch self {
        case .text(let text):
            writer.string(text)
        case .localized(let key, let arguments):
            writer.beginObject()
            writer.key("loc-key")
            writer.string(key)
            if !arguments.isEmpty {
                writer.key("loc-args")
                writer.stringArray(arguments)
            }
            writer.endObject()
        }
    }
}

extension Sound {
    func write(to writer: inout JSONWriter) {
        switch self {
        case .named(let name):
            writer.string(name)
        case .critical(let sound):
            writer.beginObject()
            writer.key("critical")
            writer.integer(sound.isCritical ? 1 : 0)
            if let name = sound.name { writer.key("name"); writer.string(name) }
            if let volume = sound.volume { writer.key("volume"); writer.decimal(volume) }
            writer.endObject()
        }
    }

    init(json: JSONValue, path: String) throws(NotificationValidationError) {
        switch json {
        case .string(let name):
            self = .named(name)
        case .object(let members):
            var reader = FieldReader(members: members, path: path)
            let critical = try reader.flag("critical")
            let name = try reader.string("name")
            let volume = try reader.number("volume")
            if let unexpected = reader.remaining.keys.sorted().first {
                throw NotificationValidationError(
                    .invalidField, field: "\(path).\(unexpected)", reason: nil,
                    message: "A critical sound dictionary has only critical, name and volume.")
            }
            self = .critical(CriticalSound(name: name, volume: volume, isCritical: critical))
        default:
            throw FieldReader.typeError(path, expected: "a string or an object", got: json)
        }
    }
}

/// Takes typed values out of a JSON object one key at a time, naming the full path in errors.
struct FieldReader {
    private(set) var remaining: [String: JSONValue]
    let path: String

    init(members: [String: JSONValue], path: String) {
        self.remaining = members
        self.path = path
    }

    static func typeError(_ field: String, expected: String, got value: JSONValue) -> NotificationValidationError {
        NotificationValidationError(
            .invalidField, field: field, reason: nil, message: "Must be \(expected), but it is \(value.typeName).")
    }

    mutating func take(_ key: String) -> JSONValue? {
        // Readers ask for every known key, most of them absent; once all members are taken, skip hashing them.
        remaining.isEmpty ? nil : remaining.removeValue(forKey: key)
    }

    mutating func string(_ key: String) throws(NotificationValidationError) -> String? {
        guard let value = take(key) else { return nil }
        guard case .string(let text) = value else { throw Self.typeError("\(path).\(key)", expected: "a string", got: value) }
        return text
    }

    /// A string naming one of a type's cases.
    /// - Parameter what: What the value must be, after "is not ", with the choices.
    mutating func choice<Choice: RawRepresentable<String>>(
        _ key: String, _ type: Choice.Type, _ what: String
    ) throws(NotificationValidationError) -> Choice? {
        guard let name = try string(key) else { return nil }
        guard let choice = Choice(rawValue: name) else {
            throw NotificationValidationError(
                .invalidField, field: "\(path).\(key)", reason: nil, message: "\"\(name)\" is not \(what).")
        }
        return choice
    }

    mutating func integer(_ key: String) throws(NotificationValidationError) -> Int? {
        guard let value = take(key) else { return nil }
        guard let number = value.intValue else { throw Self.typeError("\(path).\(key)", expected: "a whole number", got: value) }
        return number
    }

    mutating func number(_ key: String) throws(NotificationValidationError) -> Double? {
        guard let value = take(key) else { return nil }
        guard let number = value.doubleValue else { throw Self.typeError("\(path).\(key)", expected: "a number", got: value) }
        return number
    }

    mutating func bool(_ key: String) throws(NotificationValidationError) -> Bool? {
        guard let value = take(key) else { return nil }
        switch value {
        case .bool(let flag): return flag
        case .integer(let number) where number == 0 || number == 1: return number == 1
        default: throw Self.typeError("\(path).\(key)", expected: "true or false", got: value)
        }
    }

    /// A `1`-valued flag such as `content-available`; `0` and absence mean off. `true` is accepted as 1.
    mutating func flag(_ key: String) throws(NotificationValidationError) -> Bool {
        guard let value = take(key) else { return false }
        switch value {
        case .integer(let number) where number == 0 || number == 1: return number == 1
        case .bool(let flag): return flag
        default: throw Self.typeError("\(path).\(key)", expected: "1 or 0", got: value)
        }
    }

    mutating func object(_ key: String) throws(NotificationValidationError) -> [String: JSONValue]? {
        guard let value = take(key) else { return nil }
        guard case .object(let members) = value else { throw Self.typeError("\(path).\(key)", expected: "an object", got: value) }
        return members
    }

    mutating func strings(_ key: String) throws(NotificationValidationError) -> [String]? {
        guard let value = take(key) else { return nil }
        guard case .array(let elements) = value else {
            throw Self.typeError("\(path).\(key)", expected: "an array of strings", got: value)
        }
        var result = [String]()
        result.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            // APNs substitutes loc-args as text; numbers are a common slip, so name the element.
            guard case .string(let text) = element else {
                throw Self.typeError("\(path).\(key)[\(index)]", expected: "a string", got: element)
            }
            result.append(text)
        }
        return result
    }

    mutating func alertText(_ key: String) throws(NotificationValidationError) -> AlertText? {
        guard let value = take(key) else { return nil }
        switch value {
        case .string(let text):
            return .text(text)
        case .object(let members):
            var nested = FieldReader(members: members, path: "\(path).\(key)")
            guard let locKey = try nested.string("loc-key") else {
                throw NotificationValidationError(
                    .invalidField, field: "\(path).\(key).loc-key", reason: nil,
                    message: "A localized \(key) needs a loc-key.")
            }
            let arguments = try nested.strings("loc-args") ?? []
            if let unexpected = nested.remaining.keys.sorted().first {
                throw NotificationValidationError(
                    .invalidField, field: "\(path).\(key).\(unexpected)", reason: nil,
                    message: "A localized \(key) has only loc-key and loc-args.")
            }
            return .localized(key: locKey, arguments: arguments)
        default:
            throw Self.typeError("\(path).\(key)", expected: "a string or an object", got: value)
        }
    }
}
