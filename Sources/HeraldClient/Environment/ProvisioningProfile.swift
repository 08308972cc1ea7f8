public import Foundation
public import HeraldCore

/// The parts of an embedded provisioning profile that decide where the app's device tokens belong.
///
/// A profile (`embedded.mobileprovision` on iOS, tvOS, watchOS and visionOS; `Contents/embedded.provisionprofile`
/// on macOS) is a CMS (PKCS#7) signed container whose content is an XML property list. The SDK does not verify the
/// signature, which is the system's job at install time: it finds the plist inside the container and reads the
/// `aps-environment` entitlement (`com.apple.developer.aps-environment` in macOS profiles).
public struct ProvisioningProfile: Sendable, Hashable {
    /// The profile's `Name`.
    public let name: String?
    /// The first of the profile's `TeamIdentifier` values.
    public let teamIdentifier: String?
    /// The profile's `ExpirationDate`.
    public let expirationDate: Date?
    /// The raw `aps-environment` entitlement, `nil` when the app has no Push Notifications capability.
    public let apsEnvironmentValue: String?

    /// The APNs environment the entitlement names; `nil` when it is absent or not a known value.
    public var apsEnvironment: APNSEnvironment? { apsEnvironmentValue.flatMap { APNSEnvironment(name: $0) } }

    /// Reads a profile's bytes.
    /// - Throws: ``ProvisioningProfileError`` (`noPropertyList`) when the data holds no XML property list, or
    ///   (`invalidPropertyList`) when the property list does not parse or is not a dictionary.
    public init(data: Data) throws(ProvisioningProfileError) {
        guard let range = Self.propertyListRange(in: data) else {
            throw ProvisioningProfileError(
                .noPropertyList,
                "The provisioning profile holds no XML property list (no <?xml … </plist>): check that the file is an embedded.mobileprovision or embedded.provisionprofile."
            )
        }
        let plist: Any
        do {
            plist = try PropertyListSerialization.propertyList(from: data.subdata(in: range), format: nil)
        } catch {
            throw ProvisioningProfileError(
                .invalidPropertyList,
                "The provisioning profile's property list does not parse (\(error.localizedDescription)): the file may be damaged."
            )
        }
        guard let root = plist as? [String: Any] else {
            throw ProvisioningProfileError(
                .invalidPropertyList,
                "The provisioning profile's property list is not a dictionary: the file may be damaged.")
        }
        let entitlements = root["Entitlements"] as? [String: Any] ?? [:]
        name = root["Name"] as? String
        teamIdentifier = (root["TeamIdentifier"] as? [Any])?.first as? String
        expirationDate = root["ExpirationDate"] as? Date
        apsEnvironmentValue =
            entitlements["aps-environment"] as? String ?? entitlements["com.apple.developer.aps-environment"] as? String
    }

    /// Reads a profile file.
    /// - Throws: ``ProvisioningProfileError`` (`unreadable`) when the file cannot be read, or as ``init(data:)``.
    public init(contentsOf url: URL) throws(ProvisioningProfileError) {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ProvisioningProfileError(
                .unreadable, "Could not read the provisioning profile at \(url.path) (\(error.localizedDescription)).")
        }
        try self.init(data: data)
    }

    /// Where a bundle's embedded profile is, if it has one. App Store builds and Simulator builds have none.
    public static func embeddedProfileURL(in bundle: Bundle) -> URL? {
        let candidates = [
            bundle.bundleURL.appendingPathComponent("embedded.mobileprovision"),
            bundle.bundleURL.appendingPathComponent("Contents/embedded.provisionprofile"),
        ]
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) }
    }

    /// The bytes from `<?xml` through `</plist>`.
    static func propertyListRange(in data: Data) -> Range<Data.Index>? {
        guard let start = data.range(of: Data("<?xml".utf8)),
            let end = data.range(of: Data("</plist>".utf8), in: start.upperBound..<data.endIndex)
        else { return nil }
        return start.lowerBound..<end.upperBound
    }
}

/// Why a provisioning profile could not be read.
public struct ProvisioningProfileError: CodedError, Hashable {
    /// The kind of failure.
    public typealias Code = ErrorCode<ProvisioningProfileError>

    /// What failed.
    public let code: Code
    /// What went wrong and what to do.
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == ProvisioningProfileError {
    /// The file could not be read.
    public static let unreadable = Self("unreadable")
    /// The data holds no XML property list.
    public static let noPropertyList = Self("noPropertyList")
    /// The property list does not parse or is not a dictionary.
    public static let invalidPropertyList = Self("invalidPropertyList")
}
