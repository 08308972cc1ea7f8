import Foundation
import NIOSSL
import SwiftASN1
import X509

extension Doctor {
    /// An app's TLS client certificate as configured: PEM text or a `.p12`.
    enum CertificateCredential {
        case pem(chain: String, key: String)
        case pkcs12([UInt8], passphrase: String?)
    }

    /// What Apple writes into an APNs client certificate.
    struct APNSCertificateFacts: Equatable {
        /// The bundle id: the subject's UID, else the common name after `…Push Services: `.
        var topic: String?
        /// `development`, `production`, from Apple's extensions 1.2.840.113635.100.6.3.1 and .2.
        var environments: [String]
        var notBefore: Date
        var notAfter: Date

        /// Apple's extension marking a certificate good for the sandbox.
        static let developmentOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 1]
        /// … for production.
        static let productionOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 2]
        /// The user id attribute, where Apple writes the bundle id (0.9.2342.19200300.100.1.1).
        static let userIDOID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]

        init(_ certificate: Certificate) {
            var userID: String?
            var commonName: String?
            for rdn in certificate.subject {
                for attribute in rdn {
                    if attribute.type == Self.userIDOID { userID = String(attribute.value) }
                    if attribute.type == .RDNAttributeType.commonName { commonName = String(attribute.value) }
                }
            }
            // "Apple Push Services: com.example.app", "Apple Development IOS Push Services: com.example.app".
            let fromName = commonName.flatMap { name in
                name.range(of: "Push Services: ").map { String(name[$0.upperBound...]) }
            }
            topic = userID ?? fromName
            environments = [(Self.developmentOID, "development"), (Self.productionOID, "production")].compactMap {
                certificate.extensions[oid: $0.0] == nil ? nil : $0.1
            }
            notBefore = certificate.notValidBefore
            notAfter = certificate.notValidAfter
        }
    }

    /// Loads the certificate as the sender does (so a key that does not match it fails here, not at the first push),
    /// then reads its topic, environments and validity.
    func certificateCheck(_ name: String, app: String, credential: CertificateCredential)
        -> (DeploymentCheck, [CertificateExpiry])
    {
        let leaf: Certificate
        do {
            leaf = try Self.loadLeaf(credential)
        } catch let problem as CertificateProblem {
            return (DeploymentCheck(name, .failure, problem.message), [])
        } catch {
            return (DeploymentCheck(name, .failure, "The certificate cannot be read (\(error))."), [])
        }
        let facts = APNSCertificateFacts(leaf)
        let environments = facts.environments.isEmpty ? ["development", "production"] : facts.environments
        let expiries = environments.map { CertificateExpiry(app: app, environment: $0, notAfter: facts.notAfter) }
        let verdict = status(of: facts, app: app)
        return (DeploymentCheck(name, verdict.0, verdict.1), expiries)
    }

    private func status(of facts: APNSCertificateFacts, app: String) -> (DeploymentCheck.Status, String) {
        let now = options.now()
        let days = Int((facts.notAfter.timeIntervalSince(now) / 86_400).rounded(.down))
        let until = Self.day(facts.notAfter)
        let environments =
            facts.environments.isEmpty ? "no APNs environment" : facts.environments.joined(separator: " and ")
        let described = "The certificate of \(facts.topic ?? "an unnamed topic") (\(environments))"
        if facts.notAfter <= now {
            return (
                .failure,
                "\(described) expired on \(until): APNs refuses every push of the app (BadCertificate). Make a new one in your developer account (Certificates, Identifiers & Profiles) and configure it, or move the app to a .p8 key, which does not expire."
            )
        }
        if facts.notBefore > now {
            return (
                .failure,
                "\(described) is valid only from \(Self.day(facts.notBefore)): check this machine's clock, or wait."
            )
        }
        if let topic = facts.topic, topic != app {
            return (
                .failure,
                "\(described) is for \(topic), not \(app): APNs refuses pushes to \(app) over it. Configure the certificate of \(app)."
            )
        }
        let expiresSoon = facts.notAfter.timeIntervalSince(now) < options.certificateWarning
        var sentences = [
            expiresSoon
                ? "\(described) expires in \(days) day\(days == 1 ? "" : "s"), on \(until): make a new one in your developer account and configure it before then, or move the app to a .p8 key, which does not expire."
                : "\(described) loads and is valid until \(until) (\(days) days)."
        ]
        if facts.topic == nil {
            sentences.append(
                "Its subject names no bundle id (no UID, no \"Apple Push Services: <bundle id>\" common name): is it an APNs certificate?"
            )
        }
        if facts.environments.isEmpty {
            sentences.append(
                "It has neither of Apple's environment extensions (1.2.840.113635.100.6.3.1, .2): is it an APNs certificate?"
            )
        } else if facts.environments.count == 1 {
            let other = facts.environments == ["development"] ? "production" : "development"
            sentences.append(
                "Devices registered for \(other) get BadCertificateEnvironment: use an \"Apple Push Notification service SSL (Sandbox & Production)\" certificate if the app has both."
            )
        }
        return (expiresSoon || sentences.count > 1 ? .warning : .ok, sentences.joined(separator: " "))
    }

    /// `2027-01-02`.
    static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter.string(from: date)
    }

    /// Why a certificate credential cannot be used, in words for the person who configured it.
    struct CertificateProblem: Error {
        let message: String
    }

    /// The first certificate of the chain, after loading chain and key into a TLS context as the sender does.
    static func loadLeaf(_ credential: CertificateCredential) throws -> Certificate {
        var tls = TLSConfiguration.makeClientConfiguration()
        let chain: [NIOSSLCertificate]
        switch credential {
        case .pem(let chainPEM, let keyPEM):
            do {
                chain = try NIOSSLCertificate.fromPEMBytes(Array(chainPEM.utf8))
            } catch {
                throw CertificateProblem(
                    message: "The certificate file holds no PEM certificate (-----BEGIN CERTIFICATE-----): export the APNs certificate as PEM, or configure the .p12 with HERALD_P12_FILE.")
            }
            do {
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(keyPEM.utf8), format: .pem))
            } catch {
                throw CertificateProblem(
                    message: "The private key file holds no unencrypted PEM private key: export it without a password (openssl pkcs12 -nocerts -nodes), or configure the .p12 with HERALD_P12_FILE and HERALD_P12_PASSWORD.")
            }
        case .pkcs12(let data, let passphrase):
            do {
                let bundle = try NIOSSLPKCS12Bundle(buffer: data, passphrase: passphrase.map { Array($0.utf8) })
                chain = bundle.certificateChain
                tls.privateKey = .privateKey(bundle.privateKey)
            } catch {
                throw CertificateProblem(
                    message: "The .p12 cannot be opened: check HERALD_P12_PASSWORD (the password it was exported with) and that the file is the .p12 Keychain Access exported.")
            }
        }
        guard let first = chain.first else {
            throw CertificateProblem(message: "The certificate file holds no certificate.")
        }
        tls.certificateChain = chain.map { .certificate($0) }
        do {
            _ = try NIOSSLContext(configuration: tls)
        } catch {
            throw CertificateProblem(
                message: "The certificate and its private key do not load together (\(error)): the key is probably not this certificate's. Export both from the same Keychain entry.")
        }
        return try Certificate(derEncoded: try first.toDERBytes())
    }
}
