import HeraldCore

/// A gate that opens once and stays open: services wait on it until the store is migrated.
final class Gate: Sendable {
    private let isOpen = WatchedState(false, readyWhen: { $0 })

    /// Opens the gate and lets every waiter through.
    func open() { isOpen.update { $0 = true } }

    /// Returns once the gate is open, or when the task is cancelled (check `Task.isCancelled` after).
    func wait() async { await isOpen.wait() }
}
