import Crypto
import Foundation
import HeraldCore

extension Doctor {
    /// The app's `.p8` key or certificate: whether `herald serve` can use it and whether APNs is likely to.
    func credentialsCheck(_ app: AppConfiguration) -> (DeploymentCheck, [CertificateExpiry]) {
        let name = "credentials \(app.bundleID)"
        guard let credentials = app.credentials else {
            switch destination {
            case .emulator:
                return (
                    DeploymentCheck(
                        name, .skipped,
                        "None: the in-process emulator signs for this app and nothing reaches Apple. To send to Apple, set HERALD_KEY_FILE (the .p8), HERALD_TEAM_ID and HERALD_KEY_ID, or a certificate."
                    ), []
                )
            default:
                return (
                    DeploymentCheck(
                        name, .failure,
                        "None, and pushes go to \(destination.description): herald serve refuses to start. Set HERALD_KEY_FILE (the .p8), HERALD_TEAM_ID and HERALD_KEY_ID, or a certificate, for this app."
                    ), []
                )
            }
        }
        switch credentials.kind {
        case .key(let key):
            return (keyCheck(name, key: key, file: credentials.file), [])
        case .certificate(let chainPEM, let privateKeyPEM):
            return certificateCheck(name, app: app.bundleID, credential: .pem(chain: chainPEM, key: privateKeyPEM))
        case .pkcs12(let data, let passphrase):
            return certificateCheck(name, app: app.bundleID, credential: .pkcs12(data, passphrase: passphrase))
        }
    }

    /// A `.p8` key: its ids against each other, the file name and the other apps, then a provider token signed and
    /// verified. Whether Apple knows the key (not revoked, of this team) only APNs can say.
    func keyCheck(_ name: String, key: ProviderSigningKey, file: String?) -> DeploymentCheck {
        let fileName = file.map { URL(fileURLWithPath: $0).lastPathComponent }
        var failures: [String] = []
        var warnings: [String] = []
        if key.keyID == key.teamID {
            failures.append(
                "The team id is the key id (\(key.keyID)): set HERALD_TEAM_ID to the Team ID shown under Membership in your developer account."
            )
        }
        if let fileName, let named = ProviderSigningKey.keyID(fromFileName: fileName), named != key.keyID {
            warnings.append(
                "The file is named for key \(named) but the key id is \(key.keyID): APNs answers InvalidProviderToken when the key id does not name this key. Remove HERALD_KEY_ID to use the file's, or check which key this is."
            )
        }
        for (id, kind) in [(key.keyID, "key id"), (key.teamID, "team id")] where id != id.uppercased() {
            warnings.append(
                "The \(kind) \(id) has lower-case letters; Apple's ids are upper case and APNs compares them exactly: write \(id.uppercased())."
            )
        }
        for other in configuration.apps {
            guard let otherKey = other.credentials?.signingKey, otherKey.keyID == key.keyID else { continue }
            if otherKey.teamID != key.teamID {
                failures.append(
                    "\(other.bundleID) uses the same key id \(key.keyID) with team \(otherKey.teamID), this app with team \(key.teamID): a key belongs to one team; correct the team id of one of them."
                )
            } else if otherKey.publicKey.rawRepresentation != key.publicKey.rawRepresentation {
                failures.append(
                    "\(other.bundleID) has another .p8 under the same key id \(key.keyID): one of the two files is not key \(key.keyID); check the files and key ids."
                )
            }
        }
        let now = options.now()
        let token = key.signToken(issuedAt: now)
        do {
            _ = try ProviderTokenVerifier(trustedKeys: [ProviderTokenVerifier.TrustedKey(key)]).verify(
                jwt: token.jwt, now: now)
        } catch {
            failures.append("A provider token signed with the key does not verify (\(error)).")
        }
        let described = "The .p8 key \(key.keyID) of team \(key.teamID)\(fileName.map { " (\($0))" } ?? "")"
        if !failures.isEmpty {
            return DeploymentCheck(name, .failure, "\(described): " + (failures + warnings).joined(separator: " "))
        }
        if !warnings.isEmpty {
            return DeploymentCheck(name, .warning, "\(described): " + warnings.joined(separator: " "))
        }
        return DeploymentCheck(
            name, .ok,
            "\(described) reads and signs a provider token (ES256). Whether Apple accepts it (not revoked, of this team, with APNs enabled) only APNs can say: herald send with this key tells for one device."
        )
    }
}
