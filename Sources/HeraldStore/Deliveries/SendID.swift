public import Foundation

/// The id of one send: a UUID, shown in lowercase.
public struct SendID: Sendable, Hashable, LosslessStringConvertible {
    public let uuid: UUID

    /// A new random id, or a given one.
    public init(_ uuid: UUID = UUID()) { self.uuid = uuid }

    /// Parses the lowercase or uppercase UUID form.
    public init?(_ description: String) {
        guard let uuid = UUID(uuidString: description) else { return nil }
        self.uuid = uuid
    }

    public var description: String { uuid.uuidString.lowercased() }
}
