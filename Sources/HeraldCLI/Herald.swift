import ArgumentParser

/// `herald`: the provider's command line.
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "A self-hosted Apple push notification provider.",
        discussion: "Run `herald serve` for the provider server, `herald doctor` to check its configuration, `herald send` for one push from a .p8 key, `herald channels` for broadcast channels, `herald backup` to copy a live SQLite database, `herald vacuum` to let an older SQLite file shrink, `herald emulator` for a local APNs that needs no Apple account.",
        subcommands: [ServeCommand.self, DoctorCommand.self, SendCommand.self, ChannelsCommand.self, SimulatorFileCommand.self, TokensCommand.self, KeysCommand.self, WebhooksCommand.self, BackupCommand.self, VacuumCommand.self, EmulatorCommand.self, VAPIDCommand.self, WebPushCommand.self, HelloCommand.self]
    )
}
