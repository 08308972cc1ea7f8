import Foundation
import HTTPTypes
import HeraldCore
import HeraldStore
import HeraldTesting
import Testing

@testable import HeraldServer

/// docs/openapi.yaml against the server's behaviour: boundary cases are generated from each schema field's
/// constraints (type, null, length, pattern, enum, items), and the server must accept exactly the ones the
/// document calls valid (anything but `400`), and refuse the others with `400`.
@Suite("Server: OpenAPI constraints match the server", .timeLimit(.minutes(3)))
struct OpenAPIConformanceTests {
    /// docs/openapi.yaml as JSON (PyYAML reads it, as openapi-spec-validator does).
    static func document() async throws -> JSONValue {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../docs/openapi.yaml"
        ).standardized
        let result = try await ProcessRunner.run(
            "python3",
            ["-c", "import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", file.path])
        try #require(result.status == 0, "\(result.standardError)")
        return try JSONValue(parsing: Array(result.standardOutput.utf8))
    }

    /// Reasons that are not about the request's shape: the document cannot know the server's apps or devices.
    static let stateReasons: Set<String> = ["unknownTopic", "unknownToken", "noContentKey"]

    /// Reasons of the APNs rules that tie a notification's parts together, checked on the notification as a whole
    /// (ValidationTests, apns-protocol.md): a raw payload's content, the keys a push type requires. A schema cannot
    /// say them for one property, so for the properties they depend on (`notificationRuleFields`) such an answer to
    /// a value the document allows is not a disagreement.
    static let notificationRuleReasons: Set<String> = [
        "nothingVisible", "missingField", "pushTypeMismatch", "liveActivity",
    ]
    static let notificationRuleFields: Set<String> = ["payload", "pushType"]

    struct Mismatch: CustomStringConvertible {
        let field: String
        let value: String
        let specValid: Bool
        let answer: String
        var description: String {
            "\(field) = \(value): the document says \(specValid ? "valid" : "invalid"), the server answered \(answer)"
        }
    }

    /// What a run of cases found: agreements, answers left to the notification's rules, and disagreements.
    struct Tally {
        var checked = 0
        var deferred = 0
        var mismatches: [Mismatch] = []

        /// Records whether the server's answer to a value agrees with the document: a value the document allows is
        /// accepted (or refused for the server's state), one it forbids is `400`. With `underNotificationRules`, a
        /// `400` for a rule of the whole notification is counted apart.
        mutating func record(
            _ answer: ServerClient.Answer, field: String, value: JSONValue, specValid: Bool,
            underNotificationRules: Bool = false
        ) {
            let reason = answer.reason ?? ""
            let accepted = answer.status.kind == .successful || OpenAPIConformanceTests.stateReasons.contains(reason)
            if underNotificationRules, specValid, answer.status == .badRequest,
                OpenAPIConformanceTests.notificationRuleReasons.contains(reason)
            {
                deferred += 1
            } else if accepted == specValid && (accepted || answer.status == .badRequest) {
                checked += 1
            } else {
                mismatches.append(Mismatch(field: field, value: "\(value)", specValid: specValid, answer: "\(answer)"))
            }
        }

        var report: String { mismatches.map(\.description).joined(separator: "\n") }
    }

    @Test("every field of Registration: the server accepts exactly the boundary values the document allows")
    func registration() async throws {
        let spec = try await Self.document()
        let schema = try #require(spec["components"]?["schemas"]?["Registration"])
        let properties = try #require(schema["properties"]?.objectValue)
        let validToken = String(repeating: "ab", count: 32)
        let subscription = JSONValue.object([
            "endpoint": .string(WebPushRegistrationTests.endpoint),
            "keys": ["p256dh": .string(WebPushRegistrationTests.p256dh), "auth": .string(WebPushRegistrationTests.auth)],
        ])
        try await ServerHarness.withServer(configure: WebPushRegistrationTests.withWebApp) { client, _ in
            var tally = Tally()
            for (name, property) in properties.sorted(by: { $0.key < $1.key }) {
                for candidate in SchemaCases.candidates(for: property) {
                    var body: [String: JSONValue] = ["token": .string(validToken)]
                    // A web subscription's token is derived, and the webpush kind needs its subscription.
                    if name == "subscription", candidate != .null { body = ["tokenKind": "webpush"] }
                    if name == "tokenKind", candidate == "webpush" { body = ["subscription": subscription] }
                    if name != "debug" && name != "environment" { body["debug"] = .bool(true) }
                    // The activity fields belong to the token kinds that name them (the schema's descriptions).
                    // (a null one is absent: checked with the device kind, which names no activity).
                    if name == "activityType", candidate != .null { body["tokenKind"] = "liveactivity-start" }
                    if name == "activityId", candidate != .null { body["tokenKind"] = "liveactivity" }
                    // and the activity token kinds need theirs.
                    if name == "tokenKind", candidate == "liveactivity-start" { body["activityType"] = "Delivery" }
                    if name == "tokenKind", candidate == "liveactivity" { body["activityId"] = "order-1" }
                    body[name] = candidate
                    let value = JSONValue.object(body)
                    let answer = try await client.call(
                        .post, "/api/token", body: String(decoding: value.jsonBytes, as: UTF8.self))
                    #expect(answer.status.code < 500, "\(name) = \(candidate): \(answer)")
                    tally.record(
                        answer, field: name, value: candidate, specValid: SchemaCases.isValid(value, schema))
                }
            }
            #expect(tally.mismatches.isEmpty, "\(tally.report)")
            #expect(tally.checked > 200, "cases checked: \(tally.checked)")
        }
    }

    @Test("every field of Event: the server accepts exactly the boundary values the document allows")
    func event() async throws {
        let spec = try await Self.document()
        let schema = try #require(spec["components"]?["schemas"]?["Event"])
        let properties = try #require(schema["properties"]?.objectValue)
        let base: [String: JSONValue] = [
            "type": "action", "action": "accept", "token": .string(String(repeating: "ab", count: 32)),
            "sendId": "2f1c6a4e-8d0b-4c55-9a37-1f3e5b7d9c01", "apnsId": "9262a9d4-f3ef-5f38-94c8-6227ddff90a5",
            "at": "2026-01-02T08:00:00Z",
        ]
        try await ServerHarness.withServer { client, _ in
            var tally = Tally()
            for (name, property) in properties.sorted(by: { $0.key < $1.key }) {
                for candidate in SchemaCases.candidates(for: property) {
                    var event = base
                    event[name] = candidate
                    let body = JSONValue.object(["events": .array([.object(event)])])
                    let answer = try await client.call(
                        .post, "/api/events", body: String(decoding: body.jsonBytes, as: UTF8.self))
                    #expect(answer.status.code < 500, "\(name) = \(candidate): \(answer)")
                    tally.record(
                        answer, field: name, value: candidate,
                        specValid: SchemaCases.isValid(.object(event), schema))
                }
            }
            #expect(tally.mismatches.isEmpty, "\(tally.report)")
            #expect(tally.checked > 100, "cases checked: \(tally.checked)")
        }
    }

    @Test("the send target's fields: the server accepts exactly the boundary values the document allows")
    func sendTarget() async throws {
        let spec = try await Self.document()
        let target = try #require(
            spec["components"]?["schemas"]?["SendRequest"]?["properties"]?["target"]?["properties"]?.objectValue)
        try await ServerHarness.withServer { client, app in
            let key = try await app.store.createAPIKey(name: "spec", scopes: [.send]).secret.value
            var tally = Tally()
            // The target's forms: exactly one of its members.
            let targetSchema = try #require(spec["components"]?["schemas"]?["SendRequest"]?["properties"]?["target"])
            let token = String(repeating: "ab", count: 32)
            let forms: [JSONValue] = [
                .object([:]), .object(["token": .string(token)]), .object(["topic": .string(ServerHarness.topic)]),
                .object(["token": .string(token), "user": "u"]), .object(["tag": "t", "topic": "com.example.app"]),
                .object(["tokn": .string(token)]), .object(["token": .string(token), "usr": "u"]), .null, "x",
                .array([.object(["token": .string(token)])]),
            ]
            for form in forms {
                let body = JSONValue.object(["target": form, "alert": "x"])
                let answer = try await client.call(
                    .post, "/api/send", body: String(decoding: body.jsonBytes, as: UTF8.self), bearer: key)
                tally.record(
                    answer, field: "target", value: form, specValid: SchemaCases.isValid(form, targetSchema))
            }
            for name in ["token", "tokens", "user", "tag", "activity", "topic"] {
                let property = try #require(target[name])
                for candidate in SchemaCases.candidates(for: property, largeArrays: false) {
                    let body = JSONValue.object(["target": .object([name: candidate]), "alert": "x"])
                    let answer = try await client.call(
                        .post, "/api/send", body: String(decoding: body.jsonBytes, as: UTF8.self), bearer: key)
                    tally.record(
                        answer, field: "target.\(name)", value: candidate,
                        specValid: SchemaCases.isValid(candidate, property))
                }
            }
            #expect(tally.mismatches.isEmpty, "\(tally.report)")
        }
    }

    @Test("every other field of the send request: the server accepts exactly the boundary values the document allows")
    func sendRequest() async throws {
        let spec = try await Self.document()
        let schema = try #require(spec["components"]?["schemas"]?["SendRequest"])
        let properties = try #require(schema["properties"]?.objectValue)
        let validToken = String(repeating: "cd", count: 32)
        try await ServerHarness.withServer { client, app in
            let key = try await app.store.createAPIKey(name: "spec", scopes: [.send]).secret.value
            try await client.register(try DeviceToken(hex: validToken), debug: true)
            var tally = Tally()
            // A preference category is valid when the app declares it, which a schema cannot say: PreferenceTests.
            // Waiving frequency caps takes the admin scope, which a schema cannot say either: FrequencyCapTests.
            for (name, property) in properties.sorted(by: { $0.key < $1.key })
            where name != "target" && name != "preferenceCategory" && name != "frequencyCap" {
                for candidate in SchemaCases.candidates(for: property, in: spec, largeArrays: false) {
                    // A valid send around the field that shows something without it (an alert push must): an alert
                    // and a badge; a raw payload goes without the typed fields, as a background push.
                    var members: [String: JSONValue] = ["target": .object(["token": .string(validToken)])]
                    if name == "payload" {
                        members["pushType"] = .string("background")
                    } else {
                        members["alert"] = .string("x")
                        members["badge"] = .integer(1)
                    }
                    // An activity type narrows a liveactivity push: a raw start payload.
                    if name == "activityType" {
                        members = [
                            "target": .object(["token": .string(validToken)]), "pushType": "liveactivity",
                            "payload": .object([
                                "aps": .object([
                                    "event": "start", "timestamp": 1, "content-state": .object([:]),
                                    "attributes-type": "T", "attributes": .object([:]), "alert": "x",
                                ])
                            ]),
                        ]
                    }
                    // The zone of devices without one belongs to a localTime send: tomorrow's noon, always ahead.
                    if name == "timeZone" {
                        members["localTime"] = .string(
                            String(RFC3339.string(Date().addingTimeInterval(86_400)).prefix(10)) + "T12:00")
                    }
                    members[name] = candidate
                    let body = JSONValue.object(members)
                    let answer = try await client.call(
                        .post, "/api/send", body: String(decoding: body.jsonBytes, as: UTF8.self), bearer: key)
                    #expect(answer.status.code < 500, "\(name) = \(candidate): \(answer)")
                    tally.record(
                        answer, field: name, value: candidate, specValid: SchemaCases.isValid(body, schema, in: spec),
                        underNotificationRules: Self.notificationRuleFields.contains(name))
                }
            }
            #expect(tally.mismatches.isEmpty, "\(tally.report)")
            #expect(tally.checked > 300, "cases checked: \(tally.checked)")
            #expect(tally.deferred < 20, "cases left to the notification's rules: \(tally.deferred)")
        }
    }

    @Test("the query parameters of GET /api/devices, POST /api/send, GET /api/sends/{id} and GET /api/activities agree with the document")
    func queryParameters() async throws {
        let spec = try await Self.document()
        let components = try #require(spec["components"]?["parameters"])
        let devices = try #require(spec["paths"]?["/api/devices"]?["get"]?["parameters"]?.arrayValue)
        try await ServerHarness.withServer { client, app in
            let key = try await app.store.createAPIKey(name: "spec", scopes: [.send, .admin]).secret.value
            var mismatches: [Mismatch] = []
            for parameter in devices {
                let resolved =
                    parameter["$ref"]?.stringValue.flatMap { ref in
                        components[String(ref.split(separator: "/").last!)]
                    } ?? parameter
                let name = try #require(resolved["name"]?.stringValue)
                let schema = try #require(resolved["schema"])
                for candidate in SchemaCases.queryCandidates(for: schema) {
                    let base = name == "user" || name == "tag" || name == "topic" ? "" : "user=someone&"
                    let query = base + name + "=" + Self.percentEncoded(candidate)
                    let specValid = SchemaCases.isValid(SchemaCases.queryValue(candidate, schema), schema)
                    let answer = try await client.call(.get, "/api/devices?\(query)", bearer: key)
                    if (answer.status == .ok) != specValid || (!specValid && answer.status != .badRequest) {
                        mismatches.append(
                            Mismatch(field: name, value: query, specValid: specValid, answer: "\(answer)"))
                    }
                }
            }
            /// Calls `request` with each boundary value of each named parameter of an operation.
            func check(
                _ path: String, _ method: String, only names: Set<String>? = nil,
                _ request: (String) async throws -> ServerClient.Answer
            ) async throws {
                let parameters = try #require(spec["paths"]?[path]?[method]?["parameters"]?.arrayValue)
                for listed in parameters {
                    // A reference names a shared parameter (the Idempotency-Key header): only query parameters here.
                    let parameter =
                        listed["$ref"]?.stringValue.flatMap { reference in
                            spec["components"]?["parameters"]?[String(reference.split(separator: "/").last ?? "")]
                        } ?? listed
                    guard parameter["in"]?.stringValue == "query" else { continue }
                    let name = try #require(parameter["name"]?.stringValue)
                    guard names?.contains(name) ?? true else { continue }
                    let schema = try #require(parameter["schema"])
                    for candidate in SchemaCases.queryCandidates(for: schema) {
                        let specValid = SchemaCases.isValid(SchemaCases.queryValue(candidate, schema), schema)
                        let answer = try await request("\(name)=\(Self.percentEncoded(candidate))")
                        if (answer.status == .ok) != specValid || (!specValid && answer.status != .badRequest) {
                            mismatches.append(
                                Mismatch(field: name, value: candidate, specValid: specValid, answer: "\(answer)"))
                        }
                    }
                }
            }
            // POST /api/send's query parameters (dryRun), on a valid body.
            try await check("/api/send", "post") { query in
                try await client.call(
                    .post, "/api/send?\(query)", body: #"{"target": {"user": "nobody"}, "alert": "x"}"#, bearer: key)
            }
            // GET /api/activities's status and limit; its topic and cursor name state the document cannot know.
            try await check("/api/activities", "get", only: ["status", "limit"]) { query in
                try await client.call(.get, "/api/activities?\(query)", bearer: key)
            }
            // An empty after= is the first page, on sends too.
            let send = try await client.call(
                .post, "/api/send", body: #"{"target": {"user": "nobody"}, "alert": "x"}"#, bearer: key)
            let id = try #require(send.json["id"]?.stringValue)
            let empty = try await client.call(.get, "/api/sends/\(id)?after=", bearer: key)
            #expect(empty.status == .ok, "\(empty)")
            #expect(mismatches.isEmpty, "\(mismatches.map(\.description).joined(separator: "\n"))")
        }
    }

    static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// Boundary cases from a JSON Schema and a small validator for the keywords docs/openapi.yaml uses.
enum SchemaCases {
    static func types(_ schema: JSONValue) -> [String] {
        switch schema["type"] {
        case .string(let type)?: [type]
        case .array(let types)?: types.compactMap(\.stringValue)
        default: []
        }
    }

    /// The schema a `$ref` names in the document, or the schema itself.
    static func resolved(_ schema: JSONValue, in document: JSONValue?) -> JSONValue {
        guard let ref = schema["$ref"]?.stringValue, let document else { return schema }
        var target: JSONValue? = document
        for part in ref.split(separator: "/").dropFirst() { target = target?[String(part)] }
        return target.map { resolved($0, in: document) } ?? schema
    }

    /// Values around each constraint of a property, valid and invalid; `$ref`s are resolved in `document`.
    static func candidates(for schema: JSONValue, in document: JSONValue? = nil, largeArrays: Bool = true)
        -> [JSONValue]
    {
        let schema = resolved(schema, in: document)
        var values: [JSONValue] = [.null, .integer(1), .bool(true), .object([:])]
        for alternative in (schema["oneOf"]?.arrayValue ?? []) + (schema["anyOf"]?.arrayValue ?? []) {
            values += candidates(for: alternative, in: document, largeArrays: largeArrays)
        }
        let types = types(schema)
        if types.contains("integer") || types.contains("number") {
            values += numberCandidates(schema, integer: !types.contains("number"))
        }
        if types.contains("object") { values += objectCandidates(schema, in: document) }
        if types.contains("string") { values += stringCandidates(schema).map { .string($0) } }
        if types.contains("boolean") { values += [.bool(false), .string("true")] }
        if !types.contains("string") { values.append(.string("x")) }
        if types.contains("array"), let items = schema["items"] {
            let itemValues = stringCandidates(items)
            let validItem = itemValues.first { isValid(.string($0), items) } ?? "a"
            values.append(.array([]))
            if let maximum = schema["maxItems"]?.intValue, largeArrays {
                // Distinct valid items, so duplicates dropped by the store do not change the count.
                let distinct = (0...maximum).map { index in
                    JSONValue.string(validItem.count > 3 ? validItem : "\(validItem)\(index)")
                }
                values += [.array(Array(distinct.prefix(maximum))), .array(distinct)]
            }
            values += itemValues.map { .array([.string($0)]) }
            values.append(.array([.integer(1)]))
        } else {
            values.append(.array([]))
        }
        var distinct: [JSONValue] = []
        for value in values where !distinct.contains(value) { distinct.append(value) }
        return distinct
    }

    /// Numbers around the bounds and members of an integer or number schema, and the edges of 32-bit fields.
    static func numberCandidates(_ schema: JSONValue, integer: Bool) -> [JSONValue] {
        var numbers = [-1, 0, 1, 2, Int(Int32.max), Int(Int32.max) + 1, Int(UInt32.max) + 1]
        for bound in [schema["minimum"]?.intValue, schema["maximum"]?.intValue].compactMap({ $0 }) {
            numbers += [bound - 1, bound, bound + 1]
        }
        numbers += schema["enum"]?.arrayValue?.compactMap(\.intValue) ?? []
        var values = numbers.map { JSONValue.integer($0) }
        values += [.number(0.5), .number(-0.5), .number(1.5)]
        if !integer { values += [.number(0.999), .number(1.001)] }
        return values
    }

    /// Objects that exercise each declared member, an undeclared one, and the values of `additionalProperties`.
    static func objectCandidates(_ schema: JSONValue, in document: JSONValue?) -> [JSONValue] {
        var values: [JSONValue] = [.object(["custom": .string("x")]), .object(["aps": .object([:])])]
        for (name, property) in schema["properties"]?.objectValue ?? [:] {
            values += candidates(for: property, in: document, largeArrays: false).map { .object([name: $0]) }
        }
        if let additional = schema["additionalProperties"], additional.objectValue != nil {
            let valid = candidates(for: additional, in: document, largeArrays: false)
            values += valid.map { .object(["fr-CA": $0]) }
            if let member = valid.first(where: { isValid($0, additional, in: document) }) {
                values += ["", "en", "zh-Hant-TW", "not a tag", "a\u{0}b", String(repeating: "a", count: 36)]
                    .map { .object([$0: member]) }
            }
        }
        return values
    }

    static func stringCandidates(_ schema: JSONValue) -> [String] {
        if let members = schema["enum"]?.arrayValue {
            return members.compactMap(\.stringValue) + ["not-a-member", ""]
        }
        if schema["format"]?.stringValue == "uuid" {
            return ["2f1c6a4e-8d0b-4c55-9a37-1f3e5b7d9c01", "2F1C6A4E-8D0B-4C55-9A37-1F3E5B7D9C01", "not-a-uuid", ""]
        }
        if schema["format"]?.stringValue == "time-zone" {
            return [
                "Asia/Tokyo", "UTC", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "Mars/Olympus_Mons", "asia/tokyo",
                "", "Asia/Tokyo\u{0}", "Asia/Tokyo ", String(repeating: "a", count: 65),
            ]
        }
        let minimum = schema["minLength"]?.intValue ?? 0
        let maximum = schema["maxLength"]?.intValue ?? 300
        var lengths = Set([0, 1, 2, minimum, maximum, maximum + 1, maximum - 1, max(0, minimum - 1), minimum + 1])
        lengths.remove(-1)
        var values: [String] = []
        for length in lengths.sorted() where length >= 0 {
            values.append(String(repeating: "ab", count: length / 2 + 1).prefix(length).description)
            values.append(String(repeating: "a-1", count: length / 3 + 1).prefix(length).description)
        }
        values += ["a\u{0}b", "a\nb", "a\u{7}", "a b", " ab", "ab\u{7F}", "Ab09", "ab\u{85}"]
        return values
    }

    /// A query parameter's text values.
    static func queryCandidates(for schema: JSONValue) -> [String] {
        if types(schema).contains("integer") {
            let minimum = schema["minimum"]?.intValue ?? 0
            let maximum = schema["maximum"]?.intValue ?? 100
            return ["\(minimum - 1)", "\(minimum)", "\(maximum)", "\(maximum + 1)", "x", "1.5"]
        }
        if types(schema).contains("boolean") { return ["true", "false", "yes", "1"] }
        if let members = schema["enum"]?.arrayValue {
            return members.compactMap(\.stringValue) + ["not-a-member"]
        }
        // Free text, such as a user id or a cursor: only the values whose validity does not depend on the data.
        return ["", "a\u{0}b", "a\nb", "a\u{7F}"]
    }

    /// A query text as the JSON value the schema describes.
    static func queryValue(_ text: String, _ schema: JSONValue) -> JSONValue {
        if types(schema).contains("integer") { return Int(text).map { .integer($0) } ?? .string(text) }
        if types(schema).contains("boolean") { return Bool(text).map { .bool($0) } ?? .string(text) }
        return .string(text)
    }

    /// Whether a value satisfies the schema's keywords that docs/openapi.yaml uses; `$ref`s are resolved in
    /// `document`.
    static func isValid(_ value: JSONValue, _ schema: JSONValue, in document: JSONValue? = nil) -> Bool {
        let schema = resolved(schema, in: document)
        if case .bool(let anything) = schema { return anything }
        if let choices = schema["oneOf"]?.arrayValue,
            choices.filter({ isValid(value, $0, in: document) }).count != 1
        {
            return false
        }
        let types = types(schema)
        if !types.isEmpty {
            let type: String
            switch value {
            case .null: type = "null"
            case .bool: type = "boolean"
            case .integer: type = types.contains("number") && !types.contains("integer") ? "number" : "integer"
            case .number: type = "number"
            case .string: type = "string"
            case .array: type = "array"
            case .object: type = "object"
            }
            guard types.contains(type) else { return false }
        }
        if let members = schema["enum"]?.arrayValue, !members.contains(value) { return false }
        if case .string(let text) = value {
            if let minimum = schema["minLength"]?.intValue, text.count < minimum { return false }
            if let maximum = schema["maxLength"]?.intValue, text.count > maximum { return false }
            if let pattern = schema["pattern"]?.stringValue {
                // ECMA-262's `$` (JSON Schema's dialect) matches only at the end, ICU's also before a final line
                // break: the match must end where the text does.
                let whole = NSRange(text.startIndex..., in: text)
                guard let regex = try? NSRegularExpression(pattern: pattern),
                    let match = regex.firstMatch(in: text, range: whole), NSMaxRange(match.range) == whole.length
                else { return false }
            }
            if schema["format"]?.stringValue == "time-zone", TimeZone(identifier: text) == nil { return false }
        }
        if let number = value.doubleValue, value.stringValue == nil {
            if let minimum = schema["minimum"]?.doubleValue, number < minimum { return false }
            if let maximum = schema["maximum"]?.doubleValue, number > maximum { return false }
        }
        if case .array(let elements) = value {
            if let minimum = schema["minItems"]?.intValue, elements.count < minimum { return false }
            if let maximum = schema["maxItems"]?.intValue, elements.count > maximum { return false }
            if let items = schema["items"], !elements.allSatisfy({ isValid($0, items, in: document) }) { return false }
        }
        if case .object(let members) = value {
            if let minimum = schema["minProperties"]?.intValue, members.count < minimum { return false }
            if let maximum = schema["maxProperties"]?.intValue, members.count > maximum { return false }
            for name in schema["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where members[name] == nil {
                return false
            }
            let declared = schema["properties"]?.objectValue ?? [:]
            for (name, property) in declared {
                if let member = members[name], !isValid(member, property, in: document) { return false }
            }
            switch schema["additionalProperties"] {
            case .bool(false)?:
                if members.keys.contains(where: { declared[$0] == nil }) { return false }
            case .object?:
                let additional = schema["additionalProperties"]!
                for (name, member) in members where declared[name] == nil {
                    if !isValid(member, additional, in: document) { return false }
                }
            default:
                break
            }
            if let names = schema["propertyNames"] {
                if !members.keys.allSatisfy({ isValid(.string($0), names, in: document) }) { return false }
            }
            if let choices = schema["anyOf"]?.arrayValue,
                !choices.contains(where: { isValid(value, $0, in: document) })
            {
                return false
            }
        }
        return true
    }
}
