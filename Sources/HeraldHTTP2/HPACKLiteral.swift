package import NIOCore

/// The few HPACK representations (RFC 7541) a fixed-shape message needs, written without a dynamic table: a peer's
/// table size setting then never matters, and each header costs a copy instead of a table lookup and Huffman pass.
extension ByteBuffer {
    /// An integer with an N-bit prefix (RFC 7541 §5.1); `pattern` holds the representation's leading bits.
    package mutating func writeHPACKInteger(_ value: Int, prefixBits: Int, pattern: UInt8) {
        let max = (1 << prefixBits) - 1
        if value < max {
            writeInteger(pattern | UInt8(value))
            return
        }
        writeInteger(pattern | UInt8(max))
        var rest = value - max
        while rest >= 128 {
            writeInteger(UInt8(rest & 0x7F | 0x80))
            rest >>= 7
        }
        writeInteger(UInt8(rest))
    }

    /// A string literal without Huffman coding (RFC 7541 §5.2).
    package mutating func writeHPACKString(_ utf8: some Collection<UInt8>) {
        writeHPACKInteger(utf8.count, prefixBits: 7, pattern: 0)
        writeBytes(utf8)
    }

    /// A fully indexed header field from the static table (RFC 7541 §6.1), e.g. 8 for `:status: 200`.
    package mutating func writeHPACKIndexed(_ index: Int) {
        writeHPACKInteger(index, prefixBits: 7, pattern: 0x80)
    }

    /// A literal field without indexing whose name is a static-table entry (RFC 7541 §6.2.2).
    package mutating func writeHPACKLiteral(nameIndex: Int, value: some Collection<UInt8>) {
        writeHPACKInteger(nameIndex, prefixBits: 4, pattern: 0)
        writeHPACKString(value)
    }

    /// A literal field without indexing with a literal name (RFC 7541 §6.2.2).
    package mutating func writeHPACKLiteral(name: some Collection<UInt8>, value: some Collection<UInt8>) {
        writeInteger(UInt8(0))
        writeHPACKString(name)
        writeHPACKString(value)
    }
}

/// Static-table indices (RFC 7541 Appendix A) of the fields APNs messages use.
package enum HPACKStaticIndex {
    package static let authority = 1
    /// `:method GET`; also the name index of `:method` for other methods.
    package static let methodGet = 2
    package static let methodPost = 3
    package static let path = 4
    package static let schemeHTTPS = 7
    package static let status = 8
    package static let status200 = 8
    package static let contentLength = 28
    package static let contentType = 31

    /// The fully indexed entry for a status, when the static table has one.
    package static func status(_ code: Int) -> Int? {
        switch code {
        case 200: 8
        case 204: 9
        case 206: 10
        case 304: 11
        case 400: 12
        case 404: 13
        case 500: 14
        default: nil
        }
    }
}
