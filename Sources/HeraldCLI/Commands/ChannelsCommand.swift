import ArgumentParser
import Foundation
import HeraldAPNS
import HeraldCore

/// `herald channels`: APNs's channel-management API for broadcast Live Activity updates (iOS 18+).
struct ChannelsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "channels",
        abstract: "Create, list, read and delete broadcast channels (Live Activities, iOS 18+).",
        discussion: """
            Channels belong to one app (--topic, the bare bundle id) in one environment (development unless --production),
            and are managed on Apple's api-manage-broadcast host (port 2195 in development, 2196 in production); --host and
            --port name another, such as herald emulator's channel port (7495 for development). The app's Live Activities
            subscribe with input-push-channel; `herald send --channel ID` broadcasts to them. The credentials are those of
            herald send: --key with --team-id, or --cert.
            """,
        subcommands: [Create.self, List.self, Read.self, Delete.self]
    )

    /// Options every subcommand takes.
    struct Common: ParsableArguments {
        @Option(help: "The app's bare bundle id, e.g. com.example.app (no .push-type.liveactivity).") var topic: String
        @OptionGroup var connection: APNSConnectionOptions
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a channel and print its id.",
            discussion: """
                --storage-policy 0 stores no message (for frequent updates such as live scores; broadcasts on it take no
                expiration other than 0), 1 stores the newest message for devices offline, for at most 8 hours. It cannot
                change later. APNs picks the id and prints it on standard output; at most 10,000 channels per app and environment.
                """)
        @OptionGroup var common: Common
        @Option(help: "message-storage-policy: 0 (no message stored) or 1 (most recent message stored).") var storagePolicy: Int

        func validate() throws {
            if APNSMessageStoragePolicy(rawValue: storagePolicy) == nil {
                throw ValidationError("--storage-policy is 0 (no message stored) or 1 (most recent message stored).")
            }
        }

        func run() async throws {
            try await ChannelsCommand.withClient(common.connection, for: .channelManagement) { client in
                let reply = try await client.createChannel(bundleID: common.topic, storagePolicy: APNSMessageStoragePolicy(rawValue: storagePolicy)!)
                Output.line(reply.value.id.rawValue)
                Output.error("✓ channel created, message-storage-policy \(reply.value.storagePolicy), apns-request-id \(reply.requestID)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the id of every channel of the app, one per line.")
        @OptionGroup var common: Common

        func run() async throws {
            try await ChannelsCommand.withClient(common.connection, for: .channelManagement) { client in
                let reply = try await client.channels(bundleID: common.topic)
                for id in reply.value { Output.line(id.rawValue) }
                Output.error("\(reply.value.count) channel\(reply.value.count == 1 ? "" : "s"), apns-request-id \(reply.requestID)")
            }
        }
    }

    /// The options of a command about one channel: the common ones and the channel id.
    struct OneChannel: ParsableArguments {
        @OptionGroup var common: Common
        @Argument(help: "The channel id, as herald channels create or list printed it.") var channel: String

        func validate() throws {
            if APNSChannelID(channel) == nil {
                throw ValidationError("\(channel) is not a channel id: use the base64 id herald channels create or list printed.")
            }
        }

        /// Runs `body` with a channel-management client and the channel's id.
        func run(_ body: (APNSClient, APNSChannelID) async throws -> Void) async throws {
            let id = APNSChannelID(channel)!
            try await ChannelsCommand.withClient(common.connection, for: .channelManagement) { client in try await body(client, id) }
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a channel's message-storage-policy.")
        @OptionGroup var target: OneChannel

        func run() async throws {
            try await target.run { client, id in
                let reply = try await client.channel(id, bundleID: target.common.topic)
                Output.line("\(id) message-storage-policy \(reply.value.storagePolicy.rawValue)")
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a channel.", discussion: "Its id is never given out again; a message it stored may still be delivered.")
        @OptionGroup var target: OneChannel

        func run() async throws {
            try await target.run { client, id in
                let reply = try await client.deleteChannel(id, bundleID: target.common.topic)
                Output.line("✓ channel \(id) deleted, apns-request-id \(reply.requestID)")
            }
        }
    }

    /// Runs `body` with a client for `service`; APNs's refusal is printed with what to do, and exits with status 1.
    static func withClient(
        _ options: APNSConnectionOptions, for service: APNSConnectionOptions.Service, _ body: (APNSClient) async throws -> Void
    ) async throws {
        let configuration = try options.configuration(for: service, connections: 1)
        do {
            try await APNSClient.withClient(configuration: configuration) { client in try await body(client) }
        } catch let error as APNSChannelError {
            if let rejection = error.rejection {
                Output.error("✗ \(rejection.status) \(rejection.reason): \(rejection.reason.explanation) (apns-request-id \(rejection.apnsID))")
            } else {
                Output.error("✗ \(error.message)")
            }
            throw ExitCode(1)
        } catch let error as APNSClientError {
            throw ValidationError(error.description)
        }
    }
}
