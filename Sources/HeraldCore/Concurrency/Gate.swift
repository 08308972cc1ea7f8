/// A gate that opens once and stays open: services wait on it until the store is migrated.
public final class Gate: Sendable {
    private let isOpen = WatchedState(false, readyWhen: { $0 })

    /// A closed gate.
    public init() {}

    /// Opens the gate and lets every waiter through.
    public func open() { isOpen.update { $0 = true } }

    /// Returns once the gate is open, or when the task is cancelled (check `Task.isCancelled` after).
    public func wait() async { await isOpen.wait() }
}
