import Foundation
import SwiftASN1
import X509

extension Doctor {
    /// The root APNs's server certificates chain to since 2025 (sandbox 20 January, production 24 February).
    static let currentRoot = "USERTrust RSA Certification Authority"
    /// The root before it (March 2021 to February 2025). APNs no longer uses it and Mozilla's store dropped it in
    /// 2025, so its absence is only mentioned.
    static let previousRoot = "AAA Certificate Services"

    /// Whether the trust store NIO SSL uses holds the root APNs's server certificates chain to. Only when pushes go
    /// to Apple: the emulator's own CA could never satisfy it.
    func trustStoreCheck() -> DeploymentCheck {
        let name = "trust store"
        switch destination {
        case .emulator:
            return DeploymentCheck(
                name, .skipped,
                "Does not apply: pushes go to the in-process emulator, whose own CA Herald trusts. It matters once pushes go to Apple.")
        case .custom(let host):
            return DeploymentCheck(
                name, .skipped,
                "Does not apply: pushes go to \(host) (HERALD_APNS=custom), trusted through the system and HERALD_APNS_CA_FILE. It matters once pushes go to Apple.")
        case .apple, .mixed:
            break
        }
        let file = options.trustStoreFiles.first { FileManager.default.isReadableFile(atPath: $0) }
        var names = file.map { Self.commonNames(inPEMFile: $0) } ?? []
        var source = file ?? ""
        if !names.contains(Self.currentRoot), let directory = options.trustStoreDirectory {
            let inDirectory = Self.commonNames(inDirectory: directory)
            if inDirectory.contains(Self.currentRoot) { source = directory }
            names.formUnion(inDirectory)
        }
        if file == nil && names.isEmpty {
            return DeploymentCheck(
                name, .failure,
                "No trust store: none of \((options.trustStoreFiles + [options.trustStoreDirectory].compactMap { $0 }).joined(separator: ", ")) holds certificates, so no TLS connection to APNs can be verified. Install the ca-certificates package (apt-get install ca-certificates).")
        }
        guard names.contains(Self.currentRoot) else {
            return DeploymentCheck(
                name, .failure,
                "\(file ?? "The trust store") does not hold \(Self.currentRoot), the root APNs's server certificates chain to since 2025: connections to APNs fail with \"certificate verify failed\". Upgrade the ca-certificates package, or copy the root (from Sectigo or Apple's news of the change) to /usr/local/share/ca-certificates/USERTrust_RSA_Certification_Authority.crt and run update-ca-certificates.")
        }
        let previous =
            names.contains(Self.previousRoot)
            ? "it also holds \(Self.previousRoot), the root before it"
            : "\(Self.previousRoot), the root before it, is absent, which is fine: APNs no longer uses it"
        return DeploymentCheck(
            name, .ok,
            "\(source) holds \(Self.currentRoot), the root of APNs's server certificates since 2025; \(previous).")
    }

    /// The common names of the certificates in a PEM bundle; unreadable entries are passed over.
    static func commonNames(inPEMFile path: String) -> Set<String> {
        guard let data = FileManager.default.contents(atPath: path),
            let documents = try? PEMDocument.parseMultiple(pemString: String(decoding: data, as: UTF8.self))
        else { return [] }
        var names = Set<String>()
        for document in documents where document.discriminator == "CERTIFICATE" {
            guard let certificate = try? Certificate(derEncoded: document.derBytes) else { continue }
            for rdn in certificate.subject {
                for attribute in rdn where attribute.type == .RDNAttributeType.commonName {
                    if let name = String(attribute.value) { names.insert(name) }
                }
            }
        }
        return names
    }

    /// The common names of the certificates in a directory of PEM files (`/etc/ssl/certs`: `*.pem`, `*.crt` and the
    /// hashed links OpenSSL looks up).
    static func commonNames(inDirectory path: String) -> Set<String> {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        var names = Set<String>()
        for entry in entries where entry.hasSuffix(".pem") || entry.hasSuffix(".crt") {
            names.formUnion(commonNames(inPEMFile: (path as NSString).appendingPathComponent(entry)))
        }
        return names
    }
}
