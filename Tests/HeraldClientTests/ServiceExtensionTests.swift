import Foundation
import HeraldClient
import HeraldCore
import HeraldTesting
import Testing

@Suite("Service extension: media, decryption, the whole pass", .timeLimit(.minutes(1)))
struct ServiceExtensionTests {
    static let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 0x42, count: 2_000))

    static func downloader(
        in directory: URL, maximumBytes: Int = 100_000, clock: ManualClock = ManualClock()
    ) -> MediaDownloader {
        MediaDownloader(
            configuration: .init(
                maximumBytes: maximumBytes, timeLimit: .seconds(20), allowsInsecureHTTP: true, directory: directory),
            clock: clock)
    }

    static func media(_ server: LoopbackHTTPServer, _ path: String) -> URL {
        server.baseURL.appendingPathComponent(path)
    }

    // MARK: - Media

    @Test("media is saved to a temporary file that keeps its extension")
    func keepsExtension() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try await withLoopbackServer({ _, _ in
            .respond(.init(status: 200, headers: ["Content-Type": "image/jpeg"], body: Self.jpeg))
        }) { server async throws in
            let file = try await Self.downloader(in: directory.url).download(
                from: Self.media(server, "photos/beach.JPG"))
            #expect(file.fileURL.pathExtension == "jpg")
            #expect(
                file.fileURL.deletingLastPathComponent().standardizedFileURL.path
                    == directory.url.standardizedFileURL.path)
            #expect(file.byteCount == Self.jpeg.count && file.mimeType == "image/jpeg")
            #expect(try Data(contentsOf: file.fileURL) == Self.jpeg)
            #expect(server.requests.first?.path == "/photos/beach.JPG")
        }
    }

    @Test(
        "without a media extension in the URL, the content type names one; with neither, a typed error",
        arguments: [
            ("media", "video/mp4", "mp4"), ("media", "image/png; charset=binary", "png"),
            ("media", "audio/mpeg", "mp3"),
            ("image.php", "image/png", "png"), ("clip.mov", "application/octet-stream", "mov"),
            ("track.xyz", "application/octet-stream", "xyz"),
        ])
    func extensionFromType(path: String, type: String, expected: String) async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try await withLoopbackServer({ request, _ in
            .respond(
                .init(
                    status: 200, headers: ["Content-Type": request.path == "/blob" ? "application/octet-stream" : type],
                    body: Data("media".utf8)))
        }) { server async throws in
            let downloader = Self.downloader(in: directory.url)
            #expect(try await downloader.download(from: Self.media(server, path)).fileURL.pathExtension == expected)
            await #expect {
                try await downloader.download(from: Self.media(server, "blob"))
            } throws: { ($0 as? MediaDownloadError)?.code == .unknownType }
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        #expect(left.count == 1, "the failed download left nothing behind: \(left)")
    }

    @Test("a declared size over the limit is refused before the body is read")
    func declaredTooLarge() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try await withLoopbackServer({ _, _ in
            .respond(.init(status: 200, headers: ["Content-Type": "video/mp4"], body: Data(count: 300_000)))
        }) { server async throws in
            await #expect {
                try await Self.downloader(in: directory.url).download(from: Self.media(server, "clip.mp4"))
            } throws: { error in
                guard let error = error as? MediaDownloadError else { return false }
                return error.code == .tooLarge && error.message.contains("300000") && error.message.contains("100000")
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test("an undeclared size is counted as it streams and cut at the limit")
    func streamedTooLarge() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try await withLoopbackServer({ _, _ in
            .respond(
                .init(
                    status: 200, headers: ["Content-Type": "video/mp4"], body: Data(count: 300_000),
                    declaresLength: false))
        }) { server async throws in
            let downloader = Self.downloader(in: directory.url)
            await #expect {
                try await downloader.download(from: Self.media(server, "clip.mp4"))
            } throws: { ($0 as? MediaDownloadError)?.code == .tooLarge }
            // Under the limit, the same undeclared body goes through.
            let roomy = Self.downloader(in: directory.url, maximumBytes: 400_000)
            #expect(try await roomy.download(from: Self.media(server, "clip.mp4")).byteCount == 300_000)
        }
    }

    @Test("a server that never answers hits the time limit, measured on the injected clock")
    func timeLimit() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let clock = ManualClock()
        try await withLoopbackServer({ _, _ in .hold }) { server async throws in
            let downloader = Self.downloader(in: directory.url, clock: clock)
            let download = Task { try await downloader.download(from: Self.media(server, "slow.jpg")) }
            await server.waitForRequests(count: 1)
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(19))
            #expect(clock.sleeperCount == 1, "not yet")
            clock.advance(by: .seconds(1))
            await #expect {
                try await download.value
            } throws: { ($0 as? MediaDownloadError)?.code == .timedOut }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }

    @Test("HTTP errors and insecure URLs are typed errors")
    func failures() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        try await withLoopbackServer({ _, _ in .respond(.init(status: 404)) }) { server async throws in
            await #expect {
                try await Self.downloader(in: directory.url).download(from: Self.media(server, "gone.jpg"))
            } throws: { ($0 as? MediaDownloadError)?.code == .httpStatus && ($0 as? MediaDownloadError)?.status == 404 }
            let strict = MediaDownloader(configuration: .init(directory: directory.url))
            await #expect {
                try await strict.download(from: Self.media(server, "photo.jpg"))
            } throws: { ($0 as? MediaDownloadError)?.code == .insecureURL }
            #expect(server.requests.count == 1, "the insecure URL was never requested")
        }
    }

    // MARK: - Decryption

    @Test("content encrypted with core opens with the app's key and yields the title and body to show")
    func decryption() throws {
        let key = try ContentEncryptionKey.generate(id: "app-2026")
        let original = Payload(
            alert: AlertContent(title: "Agent 13", subtitle: "Priority", body: "The eagle lands at dawn"), badge: 1,
            custom: ["media-url": "https://media.example.com/bridge.jpg"])
        let sealed = try original.encryptingContent(with: key, customKeys: ["media-url"])
        let received = try Payload(jsonBytes: sealed.jsonBytes())

        let shown = try DisplayContent(decrypting: received, keys: [try ContentEncryptionKey.generate(id: "old"), key])
        #expect(shown.title == "Agent 13" && shown.subtitle == "Priority" && shown.body == "The eagle lands at dawn")
        #expect(shown.payload == original)

        let stranger = try ContentEncryptionKey(id: "app-2026", rawKey: Data(repeating: 9, count: 32))
        #expect {
            try DisplayContent(decrypting: received, keys: [stranger])
        } throws: { ($0 as? ContentEnvelopeError)?.code == .authenticationFailed }

        let plain = try DisplayContent(decrypting: original, keys: [])
        #expect(plain.title == "Agent 13", "an unencrypted payload is shown as it is")
        #expect(DisplayContent(payload: Payload(aps: APS(alert: .body("Hi")))).body == "Hi")
    }

    // MARK: - The whole pass

    @Test("the processor decrypts, counts the badge and downloads the encrypted media URL")
    func processor() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let key = try ContentEncryptionKey.generate(id: "app-2026")
        let counter = BadgeCounter(storage: InMemoryStorage())
        try counter.set(4)
        try await withLoopbackServer({ _, _ in
            .respond(.init(status: 200, headers: ["Content-Type": "image/jpeg"], body: Self.jpeg))
        }) { server async throws in
            let original = Payload(
                alert: AlertContent(title: "Agent 13", body: "Meet at the bridge"), badge: 2,
                custom: ["media-url": .string(Self.media(server, "bridge.jpg").absoluteString)])
            let received = try Payload(
                jsonBytes: try original.encryptingContent(with: key, customKeys: ["media-url"]).jsonBytes())
            #expect(received.custom["media-url"] == nil, "the URL travels encrypted")

            let processor = NotificationServiceProcessor(
                keys: [key], badgeCounter: counter, mediaDownloader: Self.downloader(in: directory.url))
            let result = await processor.process(received)
            #expect(result.problems.isEmpty, "\(result.problems)")
            #expect(result.content.title == "Agent 13" && result.content.body == "Meet at the bridge")
            #expect(result.badge == 6)
            #expect(result.attachment?.fileURL.pathExtension == "jpg")
            #expect(try counter.count() == 6)
        }
    }

    @Test("a failed step is reported and the rest still happens")
    func processorProblems() async throws {
        let key = try ContentEncryptionKey.generate(id: "app-2026")
        let sealed = try Payload(alert: AlertContent(title: "Secret", body: "Text"), badge: 1)
            .encryptingContent(with: key)
        let counter = BadgeCounter(storage: InMemoryStorage())
        let processor = NotificationServiceProcessor(keys: [], badgeCounter: counter)
        let result = await processor.process(sealed)
        #expect(result.content.body == Payload.defaultEncryptedPlaceholder.body?.text, "the placeholder is shown")
        #expect(result.badge == 1)
        guard case .decryption(let error)? = result.problems.first else {
            Issue.record("expected a decryption problem, got \(result.problems)")
            return
        }
        #expect(error.code == .unknownKey)

        var withBadURL = Payload(alert: AlertContent(title: "Hi", body: nil))
        withBadURL.custom["media-url"] = 42
        let media = await NotificationServiceProcessor(mediaDownloader: MediaDownloader()).process(withBadURL)
        #expect(media.attachment == nil && media.problems.count == 1)
        #expect(media.badge == nil, "without a badge in the payload the badge is left alone")
    }
}

@Suite("Actions and categories")
struct ActionsTests {
    @Test("the book's AcceptOrReject category")
    func acceptOrReject() throws {
        let category = NotificationCategory.acceptOrReject()
        #expect(category.identifier == "AcceptOrReject")
        #expect(category.actions.map(\.identifier) == ["accept", "reject"])
        #expect(category.actions.map(\.title) == ["Accept", "Reject"])
        #expect(category.actions.allSatisfy { $0.options.contains(.authenticationRequired) })
        #expect(category.action(withIdentifier: "reject")?.options.contains(.destructive) == true)
        #expect(category.action(withIdentifier: "accept")?.options.contains(.destructive) == false)
        #expect(!category.actions.contains { $0.options.contains(.foreground) })
        try category.validate()
        let localized = NotificationCategory.acceptOrReject(acceptTitle: "接受", rejectTitle: "拒绝")
        #expect(localized.actions.map(\.title) == ["接受", "拒绝"])
    }

    @Test(
        "a response's action identifier maps to tap, dismiss, one of the buttons, or unknown",
        arguments: [
            (NotificationResponseAction.defaultIdentifier, "AcceptOrReject", NotificationResponseAction.open),
            (NotificationResponseAction.dismissIdentifier, "AcceptOrReject", .dismiss),
            ("accept", "AcceptOrReject", .action(NotificationCategory.acceptOrReject().actions[0])),
            ("reject", "AcceptOrReject", .action(NotificationCategory.acceptOrReject().actions[1])),
            ("accept", "OtherCategory", .unknown("accept")),
            ("snooze", "AcceptOrReject", .unknown("snooze")),
        ])
    func responses(identifier: String, category: String, expected: NotificationResponseAction) {
        let action = NotificationResponseAction(
            identifier: identifier, categoryIdentifier: category, categories: [.acceptOrReject()])
        #expect(action == expected)
    }

    @Test(
        "mistakes the system would swallow are caught",
        arguments: [
            NotificationCategory(identifier: "", actions: []),
            NotificationCategory(
                identifier: "Dup",
                actions: [
                    NotificationAction(identifier: "a", title: "A"), NotificationAction(identifier: "a", title: "B"),
                ]),
            NotificationCategory(identifier: "Blank", actions: [NotificationAction(identifier: "a", title: "")]),
            NotificationCategory(
                identifier: "System",
                actions: [
                    NotificationAction(identifier: NotificationResponseAction.defaultIdentifier, title: "Open")
                ]),
            NotificationCategory(
                identifier: "Many", actions: (0..<11).map { NotificationAction(identifier: "a\($0)", title: "A") }),
        ])
    func invalid(category: NotificationCategory) {
        #expect(throws: NotificationCategoryError.self) { try category.validate() }
    }
}
