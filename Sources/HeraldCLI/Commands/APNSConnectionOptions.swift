import ArgumentParser
import Foundation
import HeraldAPNS
import HeraldCore

/// How `herald send` and `herald channels` reach APNs: the credentials, the environment and, for another APNs such as
/// `herald emulator`, its host, port and CA file.
struct APNSConnectionOptions: ParsableArguments {
    @Option(help: "The .p8 signing key from your Apple developer account.") var key: String?
    @Option(help: "Key id (default: from the AuthKey_<KEYID>.p8 file name).") var keyID: String?
    @Option(help: "Your 10-character Team ID.") var teamID: String?
    @Option(help: "Client certificate instead of a key: a PEM file (certificate, and key unless --cert-key) or a .p12.")
    var cert: String?
    @Option(help: "Private key PEM for --cert.") var certKey: String?
    @Option(help: "Password of a .p12 --cert.") var certPassword: String?

    @Flag(help: "Use the development (sandbox) APNs: tokens and channels of builds run from Xcode. The default.") var sandbox = false
    @Flag(help: "Use the production APNs: TestFlight, Ad Hoc and App Store builds.") var production = false
    @Option(help: "Another APNs host, such as herald emulator's 127.0.0.1.") var host: String?
    @Option(help: "Port of --host (default: Apple's for what the command does: 443, or 2196/2195 for channel management).")
    var port: Int?
    @Option(help: "Also trust the CA certificates in this PEM file (herald emulator writes one).") var caFile: String?
    @Option(help: "Seconds to wait for each answer.") var timeout: Int = 30

    func validate() throws {
        if sandbox && production { throw ValidationError("Choose one of --sandbox and --production.") }
        if key == nil && cert == nil { throw ValidationError("Give --key AuthKey_<KEYID>.p8 (with --team-id) or --cert.") }
        if key != nil && cert != nil { throw ValidationError("Give --key or --cert, not both.") }
        if key != nil && teamID == nil { throw ValidationError("--team-id is required with --key: the 10-character Team ID of your developer account.") }
    }

    var environment: APNSEnvironment { production ? .production : .development }

    /// What the client's pools connect to.
    enum Service {
        case devicePush, broadcast, channelManagement
    }

    /// A client configuration whose `service` destination is --host/--port (or Apple's host for it); the other
    /// destinations keep Apple's defaults.
    func configuration(for service: Service, connections: Int = 4) throws -> APNSClientConfiguration {
        let environment = environment
        let apple: APNSClientConfiguration.Destination = switch service {
        case .devicePush: .custom(host: environment.host, port: APNSEnvironment.port, environment: environment)
        case .broadcast: .broadcast(environment)
        case .channelManagement: .channelManagement(environment)
        }
        let chosen = APNSClientConfiguration.Destination.custom(
            host: host ?? apple.host, port: port ?? apple.port, environment: environment)
        return APNSClientConfiguration(
            destination: service == .devicePush ? chosen : .apple(environment), credentials: try credentials(), trust: try Self.trust(caFile: caFile),
            maximumConnections: connections, requestTimeout: .seconds(timeout),
            broadcastDestination: service == .broadcast ? chosen : nil,
            channelManagementDestination: service == .channelManagement ? chosen : nil)
    }

    private func credentials() throws -> APNSCredentials {
        if let key, let teamID {
            do {
                return .token(try ProviderSigningKey(contentsOf: URL(fileURLWithPath: key), keyID: keyID, teamID: teamID))
            } catch {
                throw ValidationError(error.description)
            }
        }
        guard let cert else { throw ValidationError("Give --key or --cert.") }
        guard let data = FileManager.default.contents(atPath: cert) else { throw ValidationError("Cannot read --cert \(cert).") }
        if cert.hasSuffix(".p12") || cert.hasSuffix(".pfx") {
            return .pkcs12(Array(data), passphrase: certPassword)
        }
        let pem = String(decoding: data, as: UTF8.self)
        let keyPEM: String
        if let certKey {
            guard let keyData = FileManager.default.contents(atPath: certKey) else { throw ValidationError("Cannot read --cert-key \(certKey).") }
            keyPEM = String(decoding: keyData, as: UTF8.self)
        } else if pem.contains("PRIVATE KEY") {
            keyPEM = pem
        } else {
            throw ValidationError("--cert \(cert) has no private key: add --cert-key, or export the certificate with its key.")
        }
        return .certificate(chainPEM: pem, privateKeyPEM: keyPEM)
    }

    /// The system's roots, and a `--ca-file`'s certificates beside them (an emulator's, say).
    static func trust(caFile: String?) throws -> APNSClientConfiguration.Trust {
        guard let caFile else { return .system }
        do {
            return try .adding(caFile: URL(fileURLWithPath: caFile))
        } catch {
            throw ValidationError("--ca-file \(caFile): \(error)")
        }
    }
}
