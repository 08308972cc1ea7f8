import Foundation
import HeraldCore
import HeraldStore

/// The members of one object of a stored job, read strictly: a member missing or of the wrong type is a
/// ``SendJobError`` `unreadable` that names it by its path in the job (`query.select`).
struct JobReader {
    let members: [String: JSONValue]
    /// The path of this object in the job, with a trailing dot; empty at the top.
    let path: String
    let sendID: SendID

    init(_ members: [String: JSONValue], path: String = "", sendID: SendID) {
        self.members = members
        self.path = path
        self.sendID = sendID
    }

    /// A member that is there and not `null`.
    subscript(_ name: String) -> JSONValue? {
        guard let value = members[name], value != .null else { return nil }
        return value
    }

    func failure(_ name: String, _ problem: String) -> SendJobError {
        .unreadable("\"\(path)\(name)\" \(problem)", sendID: sendID)
    }

    func required(_ name: String) throws(SendJobError) -> JSONValue {
        guard let value = self[name] else { throw failure(name, "is missing") }
        return value
    }

    func string(_ name: String) throws(SendJobError) -> String {
        guard let text = try optionalString(name) else { throw failure(name, "is missing") }
        return text
    }

    func optionalString(_ name: String) throws(SendJobError) -> String? {
        guard let value = self[name] else { return nil }
        guard let text = value.stringValue else { throw failure(name, "is \(value.typeName), not a string") }
        return text
    }

    func optionalInteger(_ name: String, in range: ClosedRange<Int>) throws(SendJobError) -> Int? {
        guard let value = self[name] else { return nil }
        guard case .integer(let number) = value, range.contains(number) else {
            throw failure(name, "is \(value), not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// A Boolean that is `false` when absent.
    func flag(_ name: String) throws(SendJobError) -> Bool {
        guard let value = self[name] else { return false }
        guard let flag = value.boolValue else { throw failure(name, "is \(value.typeName), not true or false") }
        return flag
    }

    func object(_ name: String) throws(SendJobError) -> JobReader {
        let value = try required(name)
        guard let members = value.objectValue else { throw failure(name, "is \(value.typeName), not an object") }
        return JobReader(members, path: path + name + ".", sendID: sendID)
    }

    func strings(_ name: String) throws(SendJobError) -> [String] {
        let value = try required(name)
        guard let elements = value.arrayValue else { throw failure(name, "is \(value.typeName), not an array") }
        var texts: [String] = []
        texts.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard let text = element.stringValue else { throw failure("\(name)[\(index)]", "is not a string") }
            texts.append(text)
        }
        return texts
    }

    /// Bytes stored as standard base64.
    func bytes(_ name: String) throws(SendJobError) -> [UInt8] {
        guard let data = Data(base64Encoded: try string(name)) else { throw failure(name, "is not base64") }
        return Array(data)
    }

    func optionalDate(_ name: String) throws(SendJobError) -> Date? {
        guard let text = try optionalString(name) else { return nil }
        guard let date = RFC3339.date(text) else { throw failure(name, "is not an RFC 3339 time") }
        return date
    }

    func environment(_ name: String) throws(SendJobError) -> APNSEnvironment? {
        guard let text = try optionalString(name) else { return nil }
        guard let environment = APNSEnvironment(name: text) else {
            throw failure(name, "is \"\(text)\", not development or production")
        }
        return environment
    }

    func priority(_ name: String) throws(SendJobError) -> APNSPriority? {
        try optionalInteger(name, in: 1...10).map { number throws(SendJobError) in
            guard let priority = APNSPriority(rawValue: number) else { throw failure(name, "is not 10, 5 or 1") }
            return priority
        }
    }

    func expiration(_ name: String) throws(SendJobError) -> APNSExpiration? {
        try optionalInteger(name, in: 0...Int(Int32.max)).map(APNSExpiration.init(secondsSince1970:))
    }
}

extension JSONValue {
    /// The job's members in name order, as text: what the store keeps.
    var storedText: String { String(decoding: sortedJSONBytes, as: UTF8.self) }

    /// A notification body with `aps.timestamp` set to a time, for a Live Activity push stamped when it is sent.
    ///
    /// The body was checked when the send was accepted with a timestamp of that moment, which has as many digits as
    /// this one: its size stays within APNs's limit. A body that is not an object with an `aps` object is returned
    /// as it is (no checked Live Activity payload is).
    static func stamping(_ body: [UInt8], at date: Date) -> [UInt8] {
        guard case .object(var members)? = try? JSONValue(parsing: body), case .object(var aps)? = members["aps"]
        else { return body }
        aps["timestamp"] = .integer(Int(date.timeIntervalSince1970))
        members["aps"] = .object(aps)
        return JSONValue.object(members).jsonBytes
    }
}
