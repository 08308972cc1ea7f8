public import Foundation
import Crypto
import HeraldCore

/// The `Herald-Signature` header (docs/integrations.md, "Verifying a delivery"), as Stripe signs:
/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, with one `v1` per secret while a rotation overlaps.
public enum WebhookSignature {
    /// The header's name.
    public static let headerName = "Herald-Signature"
    /// How old a delivery's timestamp may be before a receiver refuses it, by default: 5 minutes.
    public static let defaultTolerance: Duration = .seconds(300)

    /// The header's value for a body signed at `timestamp` with each secret, the current one first.
    public static func header(timestamp: Int64, body: some Collection<UInt8>, secrets: [String]) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + signature(timestamp: timestamp, body: body, secret: $0) })
            .joined(separator: ",")
    }

    /// The hex HMAC-SHA256 of `"<timestamp>.<body>"` under `secret`.
    public static func signature(timestamp: Int64, body: some Collection<UInt8>, secret: String) -> String {
        var message = Array("\(timestamp).".utf8)
        message.append(contentsOf: body)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Array(secret.utf8)))
        return Hex.string(code)
    }

    /// Whether a header signs `body` with `secret`, at a time within `tolerance` of `now`: what a receiver checks.
    /// Compares in constant time.
    public static func verify(
        header: String, body: some Collection<UInt8>, secret: String, now: Date,
        tolerance: Duration = defaultTolerance
    ) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) } else if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp,
            abs(now.timeIntervalSince1970 - Double(timestamp)) <= Double(tolerance.components.seconds)
        else { return false }
        let expected = Array(signature(timestamp: timestamp, body: body, secret: secret).utf8)
        return signatures.contains { candidate in
            let given = Array(candidate.utf8)
            guard given.count == expected.count else { return false }
            return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }
}
