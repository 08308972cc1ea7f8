public import Foundation
import HeraldCore

/// One thing `herald doctor` (and `herald serve` at start) checked about a deployment, with what to do about it.
public struct DeploymentCheck: Sendable, Hashable {
    /// How a check came out. The JSON of `herald doctor --json` writes the raw values.
    public enum Status: String, Sendable, Hashable, CaseIterable {
        /// Nothing to do.
        case ok
        /// Works today, but needs attention (a certificate expiring within 30 days, a database not migrated yet).
        case warning
        /// Will fail in production: `herald doctor` exits 1.
        case failure
        /// Does not apply to this configuration (the trust store when pushes go to the emulator); the message says why.
        case skipped

        /// The mark the human output starts the line with.
        public var mark: String {
            switch self {
            case .ok: "✓"
            case .warning: "!"
            case .failure: "✗"
            case .skipped: "-"
            }
        }
    }

    /// A stable name: `configuration`, `credentials <topic>`, `trust store`, `clock`, `database`, `listen`.
    public var name: String
    public var status: Status
    /// What was found and, unless all is well, what to do. Never holds key material, a JWT or a password.
    public var message: String

    /// - Parameters: see the properties.
    public init(_ name: String, _ status: Status, _ message: String) {
        self.name = name
        self.status = status
        self.message = message
    }
}

/// When an APNs client certificate stops working: one per app and environment the certificate serves, for the
/// metric `herald_apns_certificate_expiry_timestamp_seconds{app,environment}`.
public struct CertificateExpiry: Sendable, Hashable {
    /// The app's bundle id.
    public var app: String
    /// `development` or `production`.
    public var environment: String
    /// The certificate's `notAfter`.
    public var notAfter: Date
}

/// What a run of the checks found, in the order they ran.
public struct DeploymentReport: Sendable, Hashable {
    public var checks: [DeploymentCheck]
    /// The certificates' expiry dates, for the metric.
    public var certificates: [CertificateExpiry] = []

    /// Whether any check failed: `herald doctor` then exits 1. Warnings alone do not count.
    public var hasFailure: Bool { checks.contains { $0.status == .failure } }

    /// One line per check: `✓ database: …`, `! …`, `✗ …`, `- …` (skipped), then a summary line.
    public var text: String {
        var lines = checks.map { "\($0.status.mark) \($0.name): \($0.message)" }
        lines.append(summary)
        return lines.joined(separator: "\n")
    }

    /// `5 ok, 1 warning, 0 failures, 1 skipped`.
    public var summary: String {
        func count(_ status: DeploymentCheck.Status) -> Int { checks.filter { $0.status == status }.count }
        let warnings = count(.warning)
        let failures = count(.failure)
        return
            "\(count(.ok)) ok, \(warnings) warning\(warnings == 1 ? "" : "s"), \(failures) failure\(failures == 1 ? "" : "s"), \(count(.skipped)) skipped"
    }

    /// `{"checks": [{"name": …, "status": …, "message": …}, …], "ok": true}`: members in this order, always, one check
    /// per line; `ok` is false when a check failed.
    public var json: String {
        let lines = checks.map { check in
            "  {\"name\": \(Self.quoted(check.name)), \"status\": \"\(check.status.rawValue)\", \"message\": \(Self.quoted(check.message))}"
        }
        return "{\"checks\": [\n" + lines.joined(separator: ",\n") + "\n], \"ok\": \(!hasFailure)}"
    }

    /// A JSON string literal, escaped as every answer of the server is.
    static func quoted(_ text: String) -> String { JSONValue.string(text).jsonString }
}
