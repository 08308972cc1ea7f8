public import Foundation

/// A random UUID that identifies one installation of the app, made on first use and kept in storage.
///
/// Tokens change (a restore from backup, a reinstall of the OS); the installation id lets the server replace this
/// installation's previous token instead of keeping a dead one. It carries nothing about the user or the device, and
/// a reinstall of the app starts a new one when the storage lives in the app's container.
public enum InstallationID {
    /// The storage key that holds the id.
    public static let storageKey = "herald.installation-id"

    /// The installation's id, created and saved the first time it is asked for.
    /// - Parameters:
    ///   - storage: where the id lives; a ``FileStorage`` in Application Support (or the App Group container) on
    ///     devices.
    ///   - makeID: the source of new ids; tests pass a fixed one.
    /// - Throws: ``StorageError`` when the storage cannot be read or written.
    public static func current(
        in storage: any KeyValueStorage, makeID: () -> UUID = { UUID() }
    ) throws(StorageError) -> UUID {
        try storage.update(storageKey) { data in
            if let data, let text = String(data: data, encoding: .utf8), let id = UUID(uuidString: text) {
                return id
            }
            // Absent or unreadable: start a new one rather than fail the registration.
            let id = makeID()
            data = Data(id.uuidString.lowercased().utf8)
            return id
        }
    }
}
