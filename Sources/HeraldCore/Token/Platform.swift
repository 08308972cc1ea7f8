/// The Apple platform a registration comes from: the `platform` of a registration.
public struct Platform: Sendable, Hashable, CustomStringConvertible {
    private enum Base: String, Sendable, Hashable {
        case iOS, macOS, tvOS, watchOS, visionOS
    }

    private let base: Base

    private init(_ base: Base) { self.base = base }

    /// iPhone and iPad.
    public static let iOS = Platform(.iOS)
    /// Mac, including Mac Catalyst apps.
    public static let macOS = Platform(.macOS)
    /// Apple TV.
    public static let tvOS = Platform(.tvOS)
    /// Apple Watch.
    public static let watchOS = Platform(.watchOS)
    /// Apple Vision Pro.
    public static let visionOS = Platform(.visionOS)

    /// Every platform, in the order above.
    public static let all: [Platform] = [.iOS, .macOS, .tvOS, .watchOS, .visionOS]

    /// Parses the wire value (`"iOS"`, `"macOS"`, …), ignoring case.
    public init?(name: some StringProtocol) {
        let folded = name.lowercased()
        guard let match = Platform.all.first(where: { $0.name.lowercased() == folded }) else { return nil }
        self = match
    }

    /// The wire value: `iOS`, `macOS`, `tvOS`, `watchOS` or `visionOS`.
    public var name: String { base.rawValue }

    public var description: String { name }

    /// The platform this code was compiled for, or `nil` off Apple platforms (Linux tests and tools).
    public static var current: Platform? {
        #if targetEnvironment(macCatalyst) || os(macOS)
        .macOS
        #elseif os(iOS)
        .iOS
        #elseif os(tvOS)
        .tvOS
        #elseif os(watchOS)
        .watchOS
        #elseif os(visionOS)
        .visionOS
        #else
        nil
        #endif
    }
}
