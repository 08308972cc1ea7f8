import ArgumentParser
import Foundation
import HeraldCore

/// `herald simulator-file`: the notification as an `.apns` file for `xcrun simctl push` or drag-and-drop.
struct SimulatorFileCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator-file",
        abstract: "Write a notification as an .apns file for the iOS Simulator (xcrun simctl push, or drag and drop).",
        discussion: "The Simulator shows ordinary app notifications only: no VoIP, complication or File Provider pushes, and no HTTP headers (priority, expiration, collapse id are not part of the file)."
    )

    @OptionGroup var notification: NotificationOptions
    @Option(name: .shortAndLong, help: "Where to write (default: <bundle id>.apns; \"-\" for standard output).") var output: String?

    func run() async throws {
        let push = try notification.notification()
        guard push.pushType == .alert || push.pushType == .background else {
            throw ValidationError("The Simulator takes alert and background pushes only, not \(push.pushType).")
        }
        let prepared: PreparedNotification
        do {
            prepared = try push.prepare()
        } catch {
            throw ValidationError(error.description)
        }
        let bytes = try SimulatorFile.contents(of: prepared, bundleID: notification.topic)
        if output == "-" {
            FileHandle.standardOutput.write(Data(bytes + [0x0A]))
            return
        }
        let path = output ?? "\(notification.topic).apns"
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        } catch {
            throw ValidationError("Cannot write \(path): \(error.localizedDescription)")
        }
        Output.line("Wrote \(path) (\(bytes.count) bytes). Try: xcrun simctl push booted \(path)")
    }
}

/// The `.apns` format: the payload with a top-level `Simulator Target Bundle` key (apns-protocol.md §8).
enum SimulatorFile {
    static let limit = 4096

    static func contents(of notification: PreparedNotification, bundleID: String) throws -> [UInt8] {
        guard case .object(var object) = try JSONValue(parsing: notification.body) else {
            throw ValidationError("The payload must be a JSON object.")
        }
        object["Simulator Target Bundle"] = .string(bundleID)
        let bytes = JSONValue.object(object).jsonBytes
        guard bytes.count <= limit else {
            throw ValidationError("The .apns file would be \(bytes.count) bytes; the Simulator accepts at most \(limit).")
        }
        return bytes
    }
}
