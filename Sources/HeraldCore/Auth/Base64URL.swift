public import Foundation

/// Base64url without padding (RFC 4648 §5), as JWS and Herald's envelopes use it.
public enum Base64URL {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text = String(text.utf8.compactMap { byte -> Character? in
            switch byte {
            case UInt8(ascii: "+"): "-"
            case UInt8(ascii: "/"): "_"
            case UInt8(ascii: "="): nil
            default: Character(Unicode.Scalar(byte))
            }
        })
        return text
    }

    /// Decodes base64url, with or without padding. Returns `nil` for any character outside the alphabet.
    public static func decode(_ text: some StringProtocol) -> Data? {
        var standard = [UInt8]()
        standard.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"): return nil
            default: standard.append(byte)
            }
        }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(standard))
    }
}
