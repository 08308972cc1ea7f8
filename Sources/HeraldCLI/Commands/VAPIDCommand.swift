import ArgumentParser
import HeraldCore

/// `herald vapid generate`: a VAPID key pair for a web app's push subscriptions (RFC 8292, docs/web-push.md).
struct VAPIDCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vapid",
        abstract: "VAPID keys for Web Push.",
        subcommands: [Generate.self]
    )

    struct Generate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate",
            abstract: "Make a VAPID key pair: the public key for the page's subscribe call, the private key to keep secret."
        )

        @Flag(help: "Print {\"privateKey\", \"publicKey\"} as JSON.") var json = false

        func run() async throws {
            Output.line(Self.text(for: .generate(), json: json))
        }

        /// What the command prints for a key.
        static func text(for key: VAPIDKey, json: Bool) -> String {
            if json {
                return String(
                    decoding: JSONValue.object([
                        "privateKey": .string(key.privateKeyText), "publicKey": .string(key.publicKeyText),
                    ]).sortedJSONBytes, as: UTF8.self)
            }
            return """
                Public key (the page's applicationServerKey, and VAPID's k=):
                  \(key.publicKeyText)
                Private key (keep it secret, as you keep an API key; shown once):
                  \(key.privateKeyText)
                """
        }
    }
}
