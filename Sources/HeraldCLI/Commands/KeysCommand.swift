import ArgumentParser
import Foundation
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
        @Option(name: .customLong("scope"), help: "send, admin or register (repeatable; default send).") var scopes:
            [String] = []
        @OptionGroup var database: DatabaseOptions

        func validate() throws {
            for scope in scopes where !APIKeyScope.known.contains(APIKeyScope(rawValue: scope)) {
                throw ValidationError("--scope \(scope) is not a scope: use send, admin or register.")
            }
        }

        func run() async throws {
            let scopes = Set((self.scopes.isEmpty ? ["send"] : self.scopes).map { APIKeyScope(rawValue: $0) })
            let name = self.name
            let created = try await database.withStore { store in
                try await store.createAPIKey(name: name, scopes: scopes)
            }
            Output.line(
                "Created the API key \(created.key.name) (\(created.key.id.uuidString.lowercased())) with scopes \(scopes.sorted().map(\.rawValue).joined(separator: ", "))."
            )
            Output.line("Its secret, shown only now: \(created.secret.value)")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List keys: id, name, secret prefix, scopes, state. Never secrets.")

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let keys = try await database.withStore { store in try await store.apiKeys() }
            for key in keys {
                let state = key.revokedAt.map { "revoked \($0.formatted(.iso8601))" } ?? "active"
                Output.line(
                    "\(key.id.uuidString.lowercased()) \(key.name) \(key.prefix)… \(key.scopes.sorted().map(\.rawValue).joined(separator: ",")) \(state)"
                )
            }
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke a key: it stops authenticating at once.")

        @Argument(help: "The key's id, as herald keys list prints it.") var id: String
        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            guard let uuid = UUID(uuidString: id) else {
                throw ValidationError("\(id) is not a key id: copy it from herald keys list.")
            }
            guard try await database.withStore({ store in try await store.revokeAPIKey(uuid) }) else {
                Output.error("There is no active key \(id).")
                throw ExitCode(1)
            }
            Output.line("revoked \(id)")
        }
    }
}
