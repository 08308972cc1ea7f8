public import Foundation
public import HeraldCore

/// The token registry: what apps registered, queried for sends, pruned on APNs's answers.
///
/// Every method is safe to call concurrently from many tasks. Methods throw ``StoreError`` (or `CancellationError`).
public protocol TokenStore: Sendable {
    /// Stores a registration, or replaces the stored one for its token: an idempotent upsert.
    ///
    /// One transaction: the record is written with the current time as ``DeviceRegistration/registeredAt``, any
    /// invalidation is cleared, tags are replaced, and when the registration carries an installation id, the other
    /// tokens stored with that installation id, topic and kind are deleted (except for kinds where several coexist,
    /// ``HeraldCore/TokenKind/isOnePerInstallation``). Registering the same body twice stores one record.
    /// - Returns: Whether the token was new, the stored record, and the tokens moved aside.
    /// - Throws: ``StoreError`` `.invalidRecord` when a field breaks a limit (nothing is written).
    func upsert(_ registration: TokenRegistration) async throws -> UpsertResult

    /// Deletes a token's registration (logout, `DELETE /api/token`).
    /// - Returns: `false` when the token was not stored.
    func remove(_ token: DeviceToken) async throws -> Bool

    /// The registration of a token, active or invalidated, or `nil` when unknown.
    func device(_ token: DeviceToken) async throws -> DeviceRegistration?

    /// One page of the registrations a query matches, in a stable order, starting after a cursor.
    ///
    /// Keyset pagination over an index: each page costs the same whatever its position, and no page holds more than
    /// `limit` rows in memory. Rows registered or removed between pages never cause a row that matched throughout to
    /// be returned twice or skipped.
    /// - Parameters:
    ///   - query: What to match.
    ///   - cursor: The previous page's ``DevicePage/next``, or `nil` for the first page.
    ///   - limit: The most rows to return, at least 1.
    func devices(matching query: DeviceQuery, after cursor: DeviceCursor?, limit: Int) async throws -> DevicePage

    /// How many registrations a query matches.
    func count(matching query: DeviceQuery) async throws -> Int

    /// Where to cut a query's matches into shards of `size`: the position of every `size`-th device but the last one,
    /// in the order ``devices(matching:after:limit:)`` walks, up to `limit` positions (so no shard is empty). Shard `i`
    /// runs from position `i − 1` (exclusive; the start for the first) through position `i` (inclusive; the end for the
    /// last). Counts the query's target before the rules about the person (preferences, frequency caps, own quiet
    /// hours), which probe other tables per device: a shard holds at most `size` matches. One statement per boundary,
    /// over the index and each device's own columns.
    func shardBoundaries(matching query: DeviceQuery, size: Int, limit: Int) async throws -> [DeviceCursor]

    /// The time zones of the registrations a query matches: what a send at a local wall-clock time must wait for.
    func timeZones(matching query: DeviceQuery) async throws -> DeviceTimeZones

    /// Applies APNs's verdict that a token is dead (apns-protocol.md §5.6).
    ///
    /// When APNs gives a timestamp (`410 Unregistered`), the token is kept if the app registered it after that
    /// moment, and invalidated otherwise. Without one (`ExpiredToken`, or `BadDeviceToken` after the other
    /// environment failed too) it is invalidated. An invalidated token stays out of every query until the app
    /// registers it again.
    /// - Parameters:
    ///   - token: The rejected token.
    ///   - reason: APNs's reason, kept with the record.
    ///   - apnsTimestamp: The 410 `timestamp`, or `nil`.
    func invalidate(token: DeviceToken, reason: APNSReason, at apnsTimestamp: Date?) async throws
        -> InvalidationResult

    /// Moves a token to the other APNs environment: the `BadDeviceToken` correction, after the other environment's
    /// host accepted it.
    /// - Parameter send: The background send that corrected it, if any: the store notes the correction with the move,
    ///   in one transaction (``DeliveryStore/tokensCorrected(by:among:)``), so that the send's walk of the other
    ///   environment does not push to the device a second time.
    /// - Returns: The updated record, or `nil` when the token is not stored (nothing is noted then).
    func updateEnvironment(token: DeviceToken, to environment: APNSEnvironment, correctedBy send: SendID?)
        async throws -> DeviceRegistration?

    /// Deletes the tokens invalidated before a moment, for retention.
    /// - Returns: How many were deleted.
    func purgeInvalidated(before date: Date) async throws -> Int
}

extension TokenStore {
    /// Every registration a query matches, fetched page by page as the sequence is iterated.
    ///
    /// At most one page is held at a time, so this walks a topic of millions of devices in constant memory.
    /// - Parameter pageSize: The rows fetched per round trip.
    /// Moves a token to the other APNs environment outside any send (``updateEnvironment(token:to:correctedBy:)``).
    public func updateEnvironment(token: DeviceToken, to environment: APNSEnvironment) async throws
        -> DeviceRegistration?
    {
        try await updateEnvironment(token: token, to: environment, correctedBy: nil)
    }

    public func allDevices(matching query: DeviceQuery, pageSize: Int = 1_000) -> DeviceSequence {
        DeviceSequence(store: self, query: query, pageSize: pageSize)
    }
}
