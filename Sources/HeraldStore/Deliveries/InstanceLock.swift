import Synchronization

/// A claim on one server instance's id, held for as long as a worker runs: while a process holds it, no other
/// process of the same id is alive, so the sends that an earlier run of the instance left behind are known to be
/// abandoned and can be put back in the queue at once (``DeliveryStore/requeueAbandonedSends(of:keeping:)``).
///
/// A store makes the lock in ``DeliveryStore/withInstanceLock(_:_:)``, which tries to take it once. When another
/// process holds it (two servers configured with one instance id, or a dead process whose connection the database has
/// not yet seen close), the lock is not held: ``acquire()`` tries again. Call it from one task at a time.
public final class InstanceLock: Sendable {
    /// The instance id the lock is for: the first part of the instance's worker names.
    public let instance: String
    private let held: Mutex<Bool>
    private let take: @Sendable () async throws -> Bool
    /// Whether the store holds the lock now, for a store that may lose it (a connection that closed) and take it again.
    private let holding: (@Sendable () -> Bool)?

    /// - Parameters:
    ///   - instance: The instance id.
    ///   - held: Whether the store took the lock already.
    ///   - take: Tries to take the lock once; `true` when taken.
    package init(instance: String, held: Bool, take: @escaping @Sendable () async throws -> Bool) {
        self.instance = instance
        self.held = Mutex(held)
        self.take = take
        self.holding = nil
    }

    /// A lock the store may lose and take again by itself: `isHeld` asks it.
    /// - Parameters:
    ///   - isHeld: Whether the store holds the lock now.
    ///   - take: Tries to take the lock once; `true` when taken.
    package init(
        instance: String, isHeld: @escaping @Sendable () -> Bool, take: @escaping @Sendable () async throws -> Bool
    ) {
        self.instance = instance
        self.held = Mutex(false)
        self.take = take
        self.holding = isHeld
    }

    /// Whether this process holds the instance id alone.
    public var isHeld: Bool { holding?() ?? held.withLock { $0 } }

    /// Tries to take the lock when it is not held yet.
    /// - Returns: Whether the lock is held now.
    /// - Throws: ``StoreError`` when the database cannot be asked.
    @discardableResult
    public func acquire() async throws -> Bool {
        if isHeld { return true }
        let taken = try await take()
        if taken, holding == nil { held.withLock { $0 = true } }
        return taken
    }

    /// What every worker name of the instance starts with.
    package var workerPrefix: String { instance + "/" }

    /// Checks an instance id: 1–64 bytes, printable, without `/` (it ends the instance part of a worker name) or
    /// white space.
    /// - Returns: `nil` when usable, else what is wrong.
    public static func problem(with instance: String) -> String? {
        if instance.isEmpty || instance.utf8.count > 64 { return "must be 1 to 64 bytes long" }
        if instance.contains("/") { return "must not contain /" }
        if instance.unicodeScalars.contains(where: {
            $0.properties.isWhitespace || $0.properties.generalCategory == .control
        }) {
            return "must not contain spaces or control characters"
        }
        return nil
    }
}
