public import Foundation
public import HeraldCore

/// The APNs environment the app's tokens belong to, and how it was decided.
///
/// `#if DEBUG` is the wrong test: a Release build signed with a development profile gets sandbox tokens, and a
/// Debug build can be signed for distribution. The entitlement in the embedded provisioning profile is what the
/// system uses, so the SDK reads that, and falls back to a configured value when there is no profile (App Store and
/// Simulator builds) or it cannot be read.
public struct ResolvedEnvironment: Sendable, Hashable, CustomStringConvertible {
    /// Where the answer came from.
    public enum Source: Sendable, Hashable {
        /// The `aps-environment` entitlement of the profile at this URL.
        case provisioningProfile(URL)
        /// The configured fallback, and why the profile could not decide.
        case fallback(reason: String)
    }

    /// The environment to register tokens for.
    public let environment: APNSEnvironment
    /// Where the answer came from.
    public let source: Source

    /// Decides from a profile file, if there is one.
    /// - Parameters:
    ///   - profileURL: the embedded profile, or `nil` when the bundle has none.
    ///   - fallback: the environment when the profile cannot decide. For an app that ships through the App Store or
    ///     TestFlight (no embedded profile) that is `.production`; in the Simulator it is `.development`.
    public static func resolve(profileAt profileURL: URL?, fallback: APNSEnvironment) -> ResolvedEnvironment {
        guard let profileURL else {
            return ResolvedEnvironment(
                environment: fallback, source: .fallback(reason: "the app has no embedded provisioning profile"))
        }
        let profile: ProvisioningProfile
        do {
            profile = try ProvisioningProfile(contentsOf: profileURL)
        } catch {
            return ResolvedEnvironment(environment: fallback, source: .fallback(reason: error.message))
        }
        guard let value = profile.apsEnvironmentValue else {
            return ResolvedEnvironment(
                environment: fallback,
                source: .fallback(
                    reason:
                        "the provisioning profile has no aps-environment entitlement: add the Push Notifications capability to the app"
                ))
        }
        guard let environment = APNSEnvironment(name: value) else {
            return ResolvedEnvironment(
                environment: fallback,
                source: .fallback(
                    reason:
                        "the provisioning profile's aps-environment is \"\(value)\", which is neither development nor production"
                ))
        }
        return ResolvedEnvironment(environment: environment, source: .provisioningProfile(profileURL))
    }

    /// Decides from a bundle's embedded profile (``ProvisioningProfile/embeddedProfileURL(in:)``).
    public static func resolve(bundle: Bundle, fallback: APNSEnvironment) -> ResolvedEnvironment {
        resolve(profileAt: ProvisioningProfile.embeddedProfileURL(in: bundle), fallback: fallback)
    }

    public var description: String {
        switch source {
        case .provisioningProfile(let url): "\(environment) (from \(url.lastPathComponent))"
        case .fallback(let reason): "\(environment) (fallback: \(reason))"
        }
    }
}
