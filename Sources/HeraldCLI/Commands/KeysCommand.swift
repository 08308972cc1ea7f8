import ArgumentParser
import Foundation
import HeraldCore
import HeraldServer
import HeraldStore

/// `herald keys create|list|revoke`: API keys for the send and admin APIs.
struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Create, list and revoke API keys (Authorization: Bearer <key>). Only their hashes are stored.",
        subcommands: [Create.self, List.self, Revoke.self]
    )

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a key and print its secret, once.")

        @Argument(help: "A name for people, such as backend or ci.") var name: String
        @Option(name: .customLong("scope"), help: "send, admin, register or read (repeatable; default send).") var scopes:
            [String] = []
        @Option(name: .customLong("app"), help: "An app (bundle id) the key is for (repeatable; default every app).")
        var apps: [String] = []
        @Option(help: "The one APNs environment the key acts in: production or development (default both).")
        var environment: String?
        @Option(help: "When the key stops working: 90d, 12h, 30m from now, or an RFC 3339 instant (default never).")
        var expires: String?
        @OptionGroup var options: AdministrationOptions

        func validate() throws {
            for scope in scopes where !APIKeyScope.known.contains(APIKeyScope(rawValue: scope)) {
                throw ValidationError("--scope \(scope) is not a scope: use send, admin, register or read.")
            }
            do {
                _ = try APIKeyLimits(apps: apps, environment: environment, expires: expires, now: Date())
            } catch {
                throw ValidationError("--\(error.field): \(error.message)")
            }
        }

        func run() async throws {
            let scopes = Set((self.scopes.isEmpty ? ["send"] : self.scopes).map { APIKeyScope(rawValue: $0) })
            let (name, apps, environment, expires) = (self.name, self.apps, self.environment, self.expires)
            let created = try await options.withAdministration { administration in
                try await administration.createKey(
                    name: name, scopes: scopes, apps: apps, environment: environment, expires: expires)
            }
            // The secret's line is the only one with the whole secret; scripts take it from there (the display
            // prefix, hrld_<lookup id>, is left out of this line so that the first hrld_ match is the secret's).
            Output.line(
                "Created the API key \(created.key.name) (\(created.key.id.uuidString.lowercased())) with scopes \(scopes.sorted().map(\.rawValue).joined(separator: ", "))\(APIKeyLimits.describeLimits(created.key))."
            )
            Output.line("Its secret, shown only now: \(created.secret.value)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List keys: id, name, secret prefix, scopes, state, apps, environment, expiry, last use. Never secrets.")

        @OptionGroup var options: AdministrationOptions

        func run() async throws {
            let keys = try await options.withAdministration { administration in try await administration.keys() }
            let now = Date()
            for key in keys {
                let state =
                    key.revokedAt.map { "revoked \($0.formatted(.iso8601))" }
                    ?? (key.isExpired(at: now) ? "expired" : "active")
                let apps = key.apps.isEmpty ? "every-app" : key.apps.sorted().joined(separator: ",")
                let expiry = key.expiresAt.map { " expires \($0.formatted(.iso8601))" } ?? ""
                let used = key.lastUsedAt.map { " last-used \($0.formatted(.iso8601))" } ?? " never-used"
                Output.line(
                    "\(key.id.uuidString.lowercased()) \(key.name) \(key.prefix)… \(key.scopes.sorted().map(\.rawValue).joined(separator: ",")) \(state) \(apps) \(key.environment?.name ?? "both")\(expiry)\(used)"
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key: a running server refuses it within 5 seconds.")

        @Argument(help: "The key's id, as herald keys list prints it.") var id: String
        @OptionGroup var options: AdministrationOptions

        func run() async throws {
            guard let uuid = UUID(uuidString: id) else {
                throw ValidationError("\(id) is not a key id: copy it from herald keys list.")
            }
            let revoked = try await options.withAdministration { administration in
                try await administration.revokeKey(uuid)
            }
            Output.line("revoked \(id) (\(revoked.name))")
        }
    }
}
