/// Lowercase hexadecimal, two digits per byte: how Herald writes tokens, hashes and salts as text.
public enum Hex {
    /// The bytes as lowercase hexadecimal.
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        var digits = [UInt8]()
        digits.reserveCapacity(bytes.underestimatedCount * 2)
        appendDigits(of: bytes, to: &digits)
        return String(decoding: digits, as: UTF8.self)
    }

    /// Appends the bytes' lowercase hex digits, as UTF-8, to `digits`.
    static func appendDigits(of bytes: some Sequence<UInt8>, to digits: inout [UInt8]) {
        for byte in bytes {
            digits.append(alphabet[Int(byte >> 4)])
            digits.append(alphabet[Int(byte & 0x0F)])
        }
    }

    private static let alphabet: [UInt8] = Array("0123456789abcdef".utf8)
}
