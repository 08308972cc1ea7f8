/// The console's templates (by name, without `.mustache`) and static files (style sheet, scripts, icon), as shipped:
/// the files in Console/Assets, which SwiftPM embeds in the binary (`resources: [.embedInCode("Console/Assets")]` in
/// Package.swift), so the `herald` binary needs no resource bundle. A new file needs its line here:
/// ConsolePageTests checks that every file in the folder has one.
enum ConsoleAssets {
    static let templates: [String: String] = [
        "activities": text(PackageResources.activities_mustache),
        "audit": text(PackageResources.audit_mustache),
        "channels": text(PackageResources.channels_mustache),
        "compose": text(PackageResources.compose_mustache),
        "delivery": text(PackageResources.delivery_mustache),
        "device": text(PackageResources.device_mustache),
        "devices": text(PackageResources.devices_mustache),
        "empty-devices": text(PackageResources.empty_devices_mustache),
        "emulator": text(PackageResources.emulator_mustache),
        "error": text(PackageResources.error_mustache),
        "keys": text(PackageResources.keys_mustache),
        "layout": text(PackageResources.layout_mustache),
        "overview": text(PackageResources.overview_mustache),
        "overview-scoped": text(PackageResources.overview_scoped_mustache),
        "preferences": text(PackageResources.preferences_mustache),
        "send": text(PackageResources.send_mustache),
        "sends": text(PackageResources.sends_mustache),
        "sign-in": text(PackageResources.sign_in_mustache),
        "webhooks": text(PackageResources.webhooks_mustache),
    ]

    static let files: [String: String] = [
        "compose.js": text(PackageResources.compose_js),
        "confirm.js": text(PackageResources.confirm_js),
        "console.css": text(PackageResources.console_css),
        "favicon.svg": text(PackageResources.favicon_svg),
        "send.js": text(PackageResources.send_js),
    ]

    private static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
