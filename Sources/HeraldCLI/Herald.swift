import ArgumentParser

/// `herald`: the provider's command line.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A self-hosted Apple push notification provider.",
        discussion: "Send a push with `herald send`; run `herald emulator` for a local APNs that needs no Apple account.",
        subcommands: [SendCommand.self, SimulatorFileCommand.self, EmulatorCommand.self]
    )
}
