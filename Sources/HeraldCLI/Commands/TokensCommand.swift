import ArgumentParser
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore

/// `herald tokens list|add|remove`: the token registry, from the command line.
struct TokensCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens",
        abstract: "List, add and remove registered device tokens in the server's database.",
        subcommands: [List.self, Add.self, Remove.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List registered tokens: one line each, environment, topic, kind, token, user.",
            discussion: "Pages of --limit; pass the printed --after value to see the next page.")

        @Option(help: "Only this app (bundle id); with no --user or --tag, every token of the app.") var topic: String?
        @Option(help: "Only this user id's tokens.") var user: String?
        @Option(help: "Only tokens with this tag.") var tag: String?
        @Option(help: "Only development or production tokens.") var environment: String?
        @Flag(help: "Include tokens APNs invalidated.") var includeInvalidated = false
        @Option(help: "Tokens per page (1-10000).") var limit = 100
        @Option(help: "Continue after this cursor (printed at the end of a page).") var after: String?
        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            guard topic != nil || user != nil || tag != nil else {
                throw ValidationError("Say which tokens: --topic <bundle id>, --user <id> or --tag <tag>.")
            }
            guard user == nil || tag == nil else { throw ValidationError("Give --user or --tag, not both.") }
            guard (1...10_000).contains(limit) else { throw ValidationError("--limit is 1 to 10000.") }
            if let environment, APNSEnvironment(name: environment) == nil {
                throw ValidationError("--environment is development or production.")
            }
            if let after, DeviceCursor(after) == nil {
                throw ValidationError("--after takes the cursor a page printed.")
            }
        }

        func run() async throws {
            var query: DeviceQuery = user.map { .user($0) } ?? tag.map { .tag($0) } ?? .topic(topic!)
            if let topic { query = query.inTopic(topic) }
            let selection = query.environment(environment.flatMap { APNSEnvironment(name: $0) }).includingInvalidated(
                includeInvalidated)
            let (cursor, limit) = (after.flatMap(DeviceCursor.init), limit)
            let page = try await database.withStore { store in
                try await store.devices(matching: selection, after: cursor, limit: limit)
            }
            for device in page.devices {
                var line = "\(device.environment.name) \(device.topic) \(device.tokenKind.name) \(device.token.hex)"
                if let user = device.userID { line += " user=\(user)" }
                if !device.tags.isEmpty { line += " tags=\(device.tags.joined(separator: ","))" }
                if let invalidation = device.invalidation { line += " invalidated=\(invalidation.reason)" }
                Output.line(line)
            }
            if let next = page.next { Output.line("more: --after \(next)") }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a token, as POST /api/token would.")

        @Argument(help: "The device token in hex.") var token: String
        @Flag(help: "A development (sandbox) token.") var debug = false
        @Option(help: "development or production (instead of --debug).") var environment: String?
        @Option(help: "The app's bundle id (default: the server's only app).") var topic: String?
        @Option(help: "The user id.") var user: String?
        @Option(name: .customLong("language"), help: "A preferred language, most preferred first (repeatable).")
        var languages: [String] = []
        @Option(name: .customLong("tag"), help: "A tag (repeatable).") var tags: [String] = []
        @Option(help: "The token kind: device, voip, liveactivity-start, …") var kind = "device"
        @OptionGroup var options: AdministrationOptions

        func run() async throws {
            let parsed: DeviceToken
            do { parsed = try DeviceToken(hex: token) } catch { throw ValidationError(error.description) }
            let resolvedEnvironment: APNSEnvironment
            switch (debug, environment.map { APNSEnvironment(name: $0) }) {
            case (_, .some(nil)): throw ValidationError("--environment is development or production.")
            case (true, .some(let named?)) where !named.isDevelopment:
                throw ValidationError("--debug and --environment production disagree.")
            case (_, .some(let named?)): resolvedEnvironment = named
            case (true, nil): resolvedEnvironment = .development
            case (false, nil):
                throw ValidationError(
                    "Say which APNs the token belongs to: --debug (development) or --environment production.")
            }
            guard let tokenKind = TokenKind(name: kind) else {
                throw ValidationError("--kind is one of \(TokenKind.all.map(\.name).joined(separator: ", ")).")
            }
            let (topic, user, languages, tags) = (topic, user, languages, tags)
            let result = try await options.withAdministration { administration in
                try await administration.registerDevice(
                    parsed, topic: topic, environment: resolvedEnvironment, kind: tokenKind, userID: user,
                    languages: languages, tags: tags)
            }
            Output.line(
                "\(result.change == .created ? "registered" : "updated") \(parsed.redacted) (\(resolvedEnvironment.name), \(result.registration.registration.topic))"
            )
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Unregister a token, as DELETE /api/token would.")

        @Argument(help: "The device token in hex.") var token: String
        @OptionGroup var options: AdministrationOptions

        func run() async throws {
            let parsed: DeviceToken
            do { parsed = try DeviceToken(hex: token) } catch { throw ValidationError(error.description) }
            let removed = try await options.withAdministration { administration in
                try await administration.removeDevice(parsed)
            }
            Output.line("removed \(parsed.redacted) (\(removed.environment.name), \(removed.topic))")
        }
    }
}
