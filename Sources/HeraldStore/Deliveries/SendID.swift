public import Foundation
import HeraldCore

/// The id of one send: a UUID, shown in lowercase.
///
/// New ids are time-ordered (version 7): the sends made one after another sort in that order, so storing them
/// appends to the sends' and outcomes' indexes instead of writing a random page of each per send.
public struct SendID: Sendable, Hashable, LosslessStringConvertible {
    public let uuid: UUID

    /// A new id, time-ordered by `date`.
    public init(at date: Date = Date()) { self.uuid = .timeOrdered(at: date) }

    /// A given id.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses the lowercase or uppercase UUID form.
    public init?(_ description: String) {
        guard let uuid = UUID(text: description) else { return nil }
        self.uuid = uuid
    }

    public var description: String { uuid.lowercasedText }
}
