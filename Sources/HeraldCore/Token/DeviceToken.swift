public import Foundation

/// The push address of one app on one device, as APNs issues it.
///
/// A device token is an opaque byte string of variable length: most are 32 bytes today, but 54-, 80- and
/// 100-byte tokens exist, so nothing here assumes a size. The canonical form is lowercase hex, which is what
/// goes after `/3/device/` and what stores index on.
public struct DeviceToken: Sendable, Hashable, Comparable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The fewest bytes a token may have. Real tokens are 32 bytes or more; anything much shorter is a typo.
    public static let minimumByteCount = 8
    /// The most bytes a token may have. Generous on purpose: Apple says not to assume a size.
    public static let maximumByteCount = 512

    /// The token as lowercase hexadecimal, two digits per byte.
    public let hex: String

    /// Parses a token from hexadecimal text.
    ///
    /// Accepts either case and tolerates the spaces and angle brackets of the old `Data.description` output
    /// (`<7465 7374 …>`), so a token copied from a log line works.
    /// - Throws: ``DeviceTokenError`` when the text is empty, has an odd number of digits, contains a character
    ///   that is not a hex digit, or is shorter or longer than the bounds above.
    public init(hex text: some StringProtocol) throws(DeviceTokenError) {
        // Scanning one contiguous buffer keeps the loop free of generic calls: walking a `some StringProtocol`'s
        // UTF-8 view looked up type metadata for every character, about 1,400 instructions each.
        let scan: HexScan
        if let contiguous = text.utf8.withContiguousStorageIfAvailable(Self.scanHex) {
            scan = contiguous
        } else {
            var copy = String(text)
            scan = copy.withUTF8(Self.scanHex)
        }
        switch scan {
        case .digits(let digits):
            try self.init(validatedDigits: digits)
        case .invalidCharacter(let utf8Offset):
            let (character, offset) = Self.character(in: text, atUTF8Offset: utf8Offset)
            throw DeviceTokenError(.invalidCharacter(character, offset: offset))
        case .unbalancedBracket:
            throw DeviceTokenError(.unbalancedBracket)
        }
    }

    private enum HexScan {
        /// Lowercase hex digits, not yet checked for count.
        case digits([UInt8])
        case invalidCharacter(atUTF8Offset: Int)
        case unbalancedBracket
    }

    private static func scanHex(_ utf8: UnsafeBufferPointer<UInt8>) -> HexScan {
        var digits = [UInt8]()
        digits.reserveCapacity(utf8.count)
        var leadingBracket = false
        for (index, byte) in utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"):
                digits.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                digits.append(byte + 32)
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                continue
            case UInt8(ascii: "<") where digits.isEmpty && !leadingBracket:
                leadingBracket = true
            case UInt8(ascii: ">") where leadingBracket:
                // Only trailing whitespace may follow the closing bracket.
                let rest = utf8.dropFirst(index + 1)
                guard rest.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }) else {
                    return .invalidCharacter(atUTF8Offset: index)
                }
                return .digits(digits)
            default:
                return .invalidCharacter(atUTF8Offset: index)
            }
        }
        return leadingBracket ? .unbalancedBracket : .digits(digits)
    }

    /// The character at a UTF-8 offset and its position in characters, for error messages only.
    private static func character(in text: some StringProtocol, atUTF8Offset target: Int) -> (Character, Int) {
        var utf8Offset = 0
        for (position, character) in text.enumerated() {
            utf8Offset += character.utf8.count
            if target < utf8Offset { return (character, position) }
        }
        return ("?", target)
    }

    private init(validatedDigits digits: [UInt8]) throws(DeviceTokenError) {
        guard !digits.isEmpty else { throw DeviceTokenError(.empty) }
        guard digits.count % 2 == 0 else { throw DeviceTokenError(.oddLength(digits.count)) }
        let bytes = digits.count / 2
        guard bytes >= Self.minimumByteCount else { throw DeviceTokenError(.tooShort(bytes)) }
        guard bytes <= Self.maximumByteCount else { throw DeviceTokenError(.tooLong(bytes)) }
        self.hex = String(decoding: digits, as: UTF8.self)
    }

    /// Wraps the raw token bytes an app receives in
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
    /// - Throws: ``DeviceTokenError`` when the data is empty or outside the length bounds.
    public init(data: some Collection<UInt8>) throws(DeviceTokenError) {
        var digits = [UInt8]()
        digits.reserveCapacity(data.count * 2)
        Hex.appendDigits(of: data, to: &digits)
        try self.init(validatedDigits: digits)
    }

    /// The raw token bytes.
    public var data: Data { Data(bytes) }

    /// The raw token bytes, as an array.
    public var bytes: [UInt8] {
        // Over the digits' contiguous storage, a pair at a time: iterating the UTF-8 view took 2.4 % of the server's
        // CPU in a fan-out, where each recording turns every answered token into bytes.
        var digits = hex
        return digits.withUTF8 { digits in
            [UInt8](unsafeUninitializedCapacity: digits.count / 2) { result, count in
                func value(_ digit: UInt8) -> UInt8 {
                    digit <= UInt8(ascii: "9") ? digit &- UInt8(ascii: "0") : digit &- UInt8(ascii: "a") &+ 10
                }
                for index in 0..<digits.count / 2 {
                    result[index] = value(digits[2 * index]) << 4 | value(digits[2 * index + 1])
                }
                count = digits.count / 2
            }
        }
    }

    /// The number of bytes in the token.
    public var byteCount: Int { hex.utf8.count / 2 }

    /// The last eight hex digits: enough to tell tokens apart in logs without revealing the address.
    public var redacted: String { "…" + String(hex.suffix(8)) }

    /// Safe to log: shows only the redacted suffix.
    public var description: String { redacted }
    /// The full token, for debugging sessions only.
    public var debugDescription: String { "DeviceToken(\(hex))" }

    public static func < (lhs: DeviceToken, rhs: DeviceToken) -> Bool { lhs.hex < rhs.hex }
}

/// Why a piece of text is not a device token.
public struct DeviceTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of problem, for callers that branch on them.
    public enum Code: Sendable, Hashable {
        case empty
        case oddLength(Int)
        case invalidCharacter(Character, offset: Int)
        case unbalancedBracket
        case tooShort(Int)
        case tooLong(Int)
    }

    public let code: Code

    init(_ code: Code) { self.code = code }

    public var description: String {
        switch code {
        case .empty:
            "The device token is empty: send the hex string the app got in didRegisterForRemoteNotificationsWithDeviceToken."
        case .oddLength(let count):
            "The device token has \(count) hex digits, an odd number: every byte is two digits, so part of it was cut off or mistyped."
        case .invalidCharacter(let character, let offset):
            "The device token contains \"\(character)\" at position \(offset + 1), which is not a hex digit (0-9, a-f): encode the token bytes as hex, not base64 or text."
        case .unbalancedBracket:
            "The device token starts with \"<\" but has no closing \">\": paste the whole token."
        case .tooShort(let bytes):
            "The device token is only \(bytes) bytes long; APNs tokens are at least \(DeviceToken.minimumByteCount) bytes (usually 32): check that the whole token was sent."
        case .tooLong(let bytes):
            "The device token is \(bytes) bytes long, more than the \(DeviceToken.maximumByteCount) bytes Herald accepts: check that only the token was sent."
        }
    }
}
