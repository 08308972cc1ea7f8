package import HeraldCore

/// Where a page of ``TokenStore/devices(matching:after:limit:)`` ended: pass it back to get the next page.
///
/// Pages are keyset-paginated on the last row's environment and token, so a token registered while a caller walks
/// the pages never makes a row appear twice or be skipped. A cursor belongs to the query that produced it.
/// Its `description` is an opaque string an HTTP API can hand out and parse back with ``init(_:)``; it contains the
/// last token, so treat it like one.
public struct DeviceCursor: Sendable, Hashable, LosslessStringConvertible {
    /// The environment of the last row returned.
    package let environment: APNSEnvironment
    /// The last token returned.
    package let token: DeviceToken

    /// A cursor just after a row.
    package init(environment: APNSEnvironment, token: DeviceToken) {
        self.environment = environment
        self.token = token
    }

    /// A cursor from stored columns.
    /// - Throws: ``StoreError`` `.corruptRecord` when they hold something no store writes.
    package init(storedEnvironment: String, token: String) throws {
        guard let environment = APNSEnvironment(name: storedEnvironment), let token = try? DeviceToken(hex: token) else {
            throw StoreError(.corruptRecord, "A stored device has an unreadable environment or token: repair the row.")
        }
        self.init(environment: environment, token: token)
    }

    /// Parses the string form of ``description``. `nil` when it is not a cursor.
    public init?(_ description: String) {
        guard let colon = description.firstIndex(of: ":"),
            let environment = APNSEnvironment(name: description[..<colon]),
            let token = try? DeviceToken(hex: description[description.index(after: colon)...])
        else { return nil }
        self.init(environment: environment, token: token)
    }

    /// `<environment>:<token hex>`.
    public var description: String { "\(environment.name):\(token.hex)" }
}
