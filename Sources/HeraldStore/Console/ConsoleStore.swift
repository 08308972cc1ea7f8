public import Foundation
public import HeraldCore

/// What the web console reads and keeps: its sign-in sessions and one-time sign-in links, and the summaries and
/// paged lists its pages show.
///
/// Every list is bounded by a limit and, where it pages, keyset-paged over an index (migration 6 adds them), so a page
/// costs the same with a million devices. Methods throw ``StoreError`` (or `CancellationError`).
public protocol ConsoleStore: Sendable {
    /// Stores a new session.
    /// - Throws: ``StoreError`` `.invalidRecord` when a session with that id exists.
    func createConsoleSession(_ session: ConsoleSession) async throws

    /// The session with an id hash, or `nil` when there is none, or when the API key it was opened with has been
    /// revoked since (revoking a key signs its sessions out).
    func consoleSession(idHash: String) async throws -> ConsoleSession?

    /// Records activity on a session, which moves its idle expiry.
    func touchConsoleSession(idHash: String, at date: Date) async throws

    /// Deletes a session (sign-out, expiry).
    /// - Returns: `false` when there was no such session.
    func deleteConsoleSession(idHash: String) async throws -> Bool

    /// Deletes the sessions last seen before a moment.
    /// - Returns: How many were deleted.
    func deleteConsoleSessions(lastSeenBefore date: Date) async throws -> Int

    /// Stores a one-time sign-in link's token hash, usable until `expiresAt`.
    func createSignInLink(tokenHash: String, expiresAt: Date) async throws

    /// Uses a one-time sign-in link: succeeds once, before it expires, across every instance on the database.
    /// - Returns: `false` when the link is unknown, used already or expired.
    func consumeSignInLink(tokenHash: String, at date: Date) async throws -> Bool

    /// The active devices counted by app, environment, token kind and platform.
    func deviceStatistics() async throws -> DeviceStatistics

    /// Devices first registered on each UTC day since a moment (days without one are left out), oldest first.
    func newDevicesPerDay(since date: Date) async throws -> [DayCount]

    /// Sends created since a moment, with their outcome counts, removals and most frequent rejection reasons.
    /// - Parameter reasons: How many rejection reasons to return at most.
    func sendStatistics(since date: Date, reasons: Int) async throws -> SendStatistics

    /// Sends created on each UTC day since a moment, with their outcome counts, oldest first.
    func sendsPerDay(since date: Date) async throws -> [DaySends]

    /// One page of sends, newest first, starting after a cursor; with `topics`, only the sends of those apps (a
    /// send recorded before sends knew their app is in no app).
    func recentSends(after cursor: SendListCursor?, limit: Int, topics: Set<String>?) async throws -> SendListPage

    /// A send's outcomes counted by kind, reason and action, largest group first. With `acceptancesFromCounts`, the
    /// notifications accepted at the first try (kept in batches, docs/storage.md "Send records") are counted as the
    /// send's accepted count less its accepted rows instead of reading its batches: a cost of its exceptions, not of
    /// its size (80,000 batches at ten million devices), for a running send's page shown again and again. The same
    /// groups wherever the counts cover every recorded notification: not for a broadcast (counts without devices) nor
    /// after retention deleted the outcomes.
    func outcomeGroups(of id: SendID, acceptancesFromCounts: Bool) async throws -> [OutcomeGroup]

    /// A device's latest delivery outcomes, newest first, with the sends they belong to.
    func deliveries(to token: DeviceToken, limit: Int) async throws -> [DeviceDelivery]

    /// Registrations, active or invalidated, whose token ends with the given lowercase hex digits, in token order.
    func devices(withTokenSuffix suffix: String, limit: Int) async throws -> [DeviceRegistration]
}

extension ConsoleStore {
    /// One page of every app's sends, newest first, starting after a cursor.
    public func recentSends(after cursor: SendListCursor?, limit: Int) async throws -> SendListPage {
        try await recentSends(after: cursor, limit: limit, topics: nil)
    }
}

extension ConsoleStore {
    /// A send's outcomes counted by kind, reason and action, largest group first, from its records.
    public func outcomeGroups(of id: SendID) async throws -> [OutcomeGroup] {
        try await outcomeGroups(of: id, acceptancesFromCounts: false)
    }
}
