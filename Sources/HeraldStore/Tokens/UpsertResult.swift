package import Foundation
public import HeraldCore

/// What ``TokenStore/upsert(_:)`` did.
public struct UpsertResult: Sendable, Hashable {
    /// Whether the token was new to the registry: the server answers `201` or `200`.
    public enum Change: Sendable, Hashable {
        /// The token was not stored before.
        case created
        /// The token was stored; its record now says what this registration says.
        case updated
    }

    /// Whether the token was new.
    public var change: Change
    /// The record as stored now.
    public var registration: DeviceRegistration
    /// Whether the token had been invalidated and this registration made it active again.
    public var reactivated: Bool
    /// Other tokens of the same installation, topic and kind that this registration replaced and that were deleted
    /// (docs/api-registration.md: one token per installation and kind), in token order.
    public var movedAside: [DeviceToken]

    public init(change: Change, registration: DeviceRegistration, reactivated: Bool, movedAside: [DeviceToken]) {
        self.change = change
        self.registration = registration
        self.reactivated = reactivated
        self.movedAside = movedAside
    }
}

extension UpsertResult {
    /// The result of an upsert from what the backend read and wrote.
    /// - Parameters:
    ///   - registration: The validated registration.
    ///   - now: The registration time written.
    ///   - createdAt: The stored `created_at` the upsert returned (µs).
    ///   - previous: The row of ``StoreSQL/selectDeviceState(_:_:)`` before the upsert, `nil` for a new token.
    ///   - movedAside: The rows the move-aside statement returned.
    package init(
        _ registration: TokenRegistration, at now: Date, createdAt: Int64, previous: (any StoredRow)?,
        movedAside: [any StoredRow]
    ) throws {
        self.init(
            change: previous == nil ? .created : .updated,
            registration: DeviceRegistration(registration, registeredAt: now, createdAt: StoreTime.date(createdAt)),
            reactivated: try previous?.optionalInteger(1) != nil,
            movedAside: try movedAside.map { try DeviceToken(hex: $0.text(0)) }.sorted())
    }

    /// The result of an upsert from the row of ``StoreSQL/register(_:at:)``.
    package init(_ registration: TokenRegistration, at now: Date, registered row: any StoredRow) throws {
        let moved = try row.optionalText(3).map { $0.split(separator: ",").map(String.init) } ?? []
        self.init(
            change: try row.integer(1) == 1 ? .updated : .created,
            registration: DeviceRegistration(registration, registeredAt: now, createdAt: StoreTime.date(try row.integer(0))),
            reactivated: try row.optionalInteger(2) != nil,
            movedAside: try moved.map { try DeviceToken(hex: $0) }.sorted())
    }
}
