import Crypto
import Foundation
import SwiftASN1
public import X509

/// A throwaway certificate authority for loopback TLS: issues the emulator's server certificate and, for
/// certificate-based authentication tests, provider client certificates.
public struct LocalCertificateAuthority: Sendable {
    public let certificate: Certificate
    let privateKey: P256.Signing.PrivateKey

    /// Makes a new CA with a fresh P-256 key, valid from an hour ago for ten years.
    public init(commonName: String = "Herald Emulator Local CA") throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            OrganizationName("Herald")
            CommonName(commonName)
        }
        let now = Date()
        self.certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(key.publicKey))
            },
            issuerPrivateKey: .init(key))
        self.privateKey = key
    }

    /// The CA certificate in PEM form: what clients add to their trust roots.
    public var certificatePEM: String { (try? certificate.serializeAsPEM().pemString) ?? "" }

    /// An issued certificate and its private key, both PEM.
    public struct Issued: Sendable {
        public let certificatePEM: String
        public let privateKeyPEM: String
        public let certificate: Certificate
    }

    /// A server certificate for the given DNS names and IP addresses (loopback by default).
    public func issueServerCertificate(dnsNames: [String] = ["localhost"], ipAddresses: [String] = ["127.0.0.1", "::1"]) throws -> Issued {
        var names = dnsNames.map { GeneralName.dnsName($0) }
        for address in ipAddresses {
            if let bytes = Self.ipBytes(address) { names.append(.ipAddress(ASN1OctetString(contentBytes: bytes[...]))) }
        }
        let subjectAlternativeNames = SubjectAlternativeNames(names)
        return try issue(
            subject: DistinguishedName { CommonName(dnsNames.first ?? "localhost") },
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true, keyEncipherment: true))
                try ExtendedKeyUsage([.serverAuth])
                subjectAlternativeNames
            })
    }

    /// A provider client certificate for one app, the shape of Apple's "Apple Push Notification service SSL"
    /// certificates: the bundle id in the subject's UID. The emulator lets it push to that bundle id and its
    /// `.voip` and `.complication` topics.
    public func issueClientCertificate(bundleID: String, teamID: String = "TESTTEAM01") throws -> Issued {
        try issue(
            subject: DistinguishedName([
                RelativeDistinguishedName(.init(type: .RDNAttributeType.userID, utf8String: bundleID)),
                RelativeDistinguishedName(.init(type: .RDNAttributeType.commonName, utf8String: "Apple Push Services: \(bundleID)")),
                RelativeDistinguishedName(.init(type: .RDNAttributeType.organizationalUnitName, utf8String: teamID)),
            ]),
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
            })
    }

    private func issue(subject: DistinguishedName, extensions: Certificate.Extensions) throws -> Issued {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(825 * 86400),
            issuer: self.certificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions, issuerPrivateKey: .init(privateKey))
        return Issued(
            certificatePEM: try certificate.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation,
            certificate: certificate)
    }

    private static func ipBytes(_ address: String) -> [UInt8]? {
        if address == "::1" { return Array(repeating: 0, count: 15) + [1] }
        let parts = address.split(separator: ".").compactMap { UInt8($0) }
        return parts.count == 4 ? parts : nil
    }
}

extension ASN1ObjectIdentifier.RDNAttributeType {
    /// `0.9.2342.19200300.100.1.1`, where Apple puts the bundle id in APNs certificates.
    static let userID: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
}
