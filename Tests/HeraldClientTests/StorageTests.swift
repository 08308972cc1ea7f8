import Foundation
import HeraldClient
import HeraldCore
import Testing

/// A fresh temporary directory per test, removed afterwards.
struct TemporaryDirectory: ~Copyable {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("herald-tests-\(UUID().uuidString)")
    deinit { try? FileManager.default.removeItem(at: url) }
}

/// The storages under test, made fresh for each test case.
enum StorageKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    case inMemory, file

    var testDescription: String { rawValue }

    func make(in directory: URL) -> any KeyValueStorage {
        switch self {
        case .inMemory: InMemoryStorage()
        case .file: FileStorage(directory: directory)
        }
    }
}

@Suite("Key-value storage, installation id and badge counter")
struct StorageTests {
    @Test("values are stored, replaced and removed", arguments: StorageKind.allCases)
    func roundTrip(kind: StorageKind) throws {
        let directory = TemporaryDirectory()
        let storage = kind.make(in: directory.url)
        #expect(try storage.data(forKey: "a") == nil)
        try storage.set(Data("one".utf8), forKey: "a")
        try storage.set(Data("two".utf8), forKey: "a")
        #expect(try storage.data(forKey: "a") == Data("two".utf8))
        try storage.set(nil, forKey: "a")
        #expect(try storage.data(forKey: "a") == nil)
        #expect {
            try storage.set(Data(), forKey: "../escape")
        } throws: { ($0 as? StorageError)?.code == .invalidKey }
    }

    @Test("file storage is shared by every instance on the directory, as an app and its extension share it")
    func fileSharing() throws {
        let directory = TemporaryDirectory()
        try FileStorage(directory: directory.url).set(Data("42".utf8), forKey: "shared")
        #expect(try FileStorage(directory: directory.url).data(forKey: "shared") == Data("42".utf8))
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(
            !names.contains { $0.hasSuffix(".tmp") || $0.contains("~") }, "no temporary files are left behind: \(names)"
        )
    }

    @Test("an unwritable directory is a typed error that says what to check")
    func unwritable() throws {
        let directory = TemporaryDirectory()
        // A file where the directory should be.
        try Data().write(to: directory.url)
        #expect {
            try FileStorage(directory: directory.url).set(Data(), forKey: "x")
        } throws: { error in
            guard let error = error as? StorageError else { return false }
            return error.code == .writeFailed && error.message.contains(directory.url.path)
        }
    }

    @Test("the installation id is made once and kept", arguments: StorageKind.allCases)
    func installationID(kind: StorageKind) throws {
        let directory = TemporaryDirectory()
        let storage = kind.make(in: directory.url)
        let first = UUID(uuidString: "6F9619FF-8B86-4011-B42D-00C04FC964FF")!
        #expect(try InstallationID.current(in: storage, makeID: { first }) == first)
        #expect(try InstallationID.current(in: storage, makeID: { UUID() }) == first)
        try storage.set(Data("garbage".utf8), forKey: InstallationID.storageKey)
        #expect(try InstallationID.current(in: storage, makeID: { first }) == first, "an unreadable id is replaced")
    }

    @Test("the badge counter: N adds N, 0 resets, no badge leaves it", arguments: StorageKind.allCases)
    func badge(kind: StorageKind) throws {
        let directory = TemporaryDirectory()
        let counter = BadgeCounter(storage: kind.make(in: directory.url))
        #expect(try counter.count() == 0)
        #expect(try counter.apply(badge: 1) == 1)
        #expect(try counter.apply(badge: 1) == 2)
        #expect(try counter.apply(badge: 3) == 5)
        #expect(try counter.apply(badge: nil) == nil)
        #expect(try counter.count() == 5)
        #expect(try counter.decrement(by: 2) == 3)
        #expect(try counter.decrement(by: 10) == 0, "never below zero")
        #expect(try counter.apply(badge: 4) == 4)
        #expect(try counter.apply(badge: 0) == 0)
        #expect(try counter.count() == 0)
        #expect(try counter.set(7) == 7)
        try counter.reset()
        #expect(try counter.count() == 0)
    }

    @Test("applying to a payload rewrites its badge to the new total", arguments: StorageKind.allCases)
    func badgePayload(kind: StorageKind) throws {
        let directory = TemporaryDirectory()
        let counter = BadgeCounter(storage: kind.make(in: directory.url))
        try counter.set(2)
        var payload = Payload(alert: AlertContent(title: "New item", body: nil), badge: 3)
        try counter.apply(to: &payload)
        #expect(payload.aps.badge == 5)
        var silent = Payload.background()
        try counter.apply(to: &silent)
        #expect(silent.aps.badge == nil)
        #expect(try counter.count() == 5)
    }

    @Test("two processes' worth of concurrent increments on file storage lose none")
    func concurrentIncrements() async throws {
        let directory = TemporaryDirectory()
        let url = directory.url
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                // Each increment through its own instance, as the app and the extension each have their own.
                group.addTask { _ = try? BadgeCounter(storage: FileStorage(directory: url)).apply(badge: 1) }
            }
        }
        #expect(try BadgeCounter(storage: FileStorage(directory: url)).count() == 40)
    }
}
