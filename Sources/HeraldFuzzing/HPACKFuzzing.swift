import HeraldHTTP2
import NIOCore
import NIOHPACK

enum HPACKFuzzing {
    static func check(_ input: [UInt8]) -> FuzzFinding? {
        var reader = FuzzInput(input)
        if reader.byte() & 1 == 0 {
            return decodeArbitraryBlock(reader.rest())
        }
        return roundTrip(&reader)
    }

    /// Any bytes as a header block, decoded under the emulator's limits: an error is fine, a trap is not.
    private static func decodeArbitraryBlock(_ block: [UInt8]) -> FuzzFinding? {
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 4096, maxHeaderListSize: 8000)
        var buffer = ByteBuffer(bytes: block)
        if let headers = try? decoder.decodeHeaders(from: &buffer) {
            let size = headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 32 }
            if size > 8000 {
                return FuzzFinding(.hpack, "a decoded list keeps the size limit", "\(size) bytes")
            }
        }
        return nil
    }

    /// Fields chosen by the input, written with Herald's literal representations, read back by NIOHPACK.
    private static func roundTrip(_ reader: inout FuzzInput) -> FuzzFinding? {
        var block = ByteBuffer()
        var expected: [(String, String)] = []
        fields: while !reader.bytes.isEmpty, expected.count < 64 {
            let kind = reader.byte() % 3
            switch kind {
            case 0:
                let index = [HPACKStaticIndex.methodPost, HPACKStaticIndex.schemeHTTPS, HPACKStaticIndex.status200][
                    Int(reader.byte()) % 3]
                block.writeHPACKIndexed(index)
                expected.append(staticEntry(index))
            case 1:
                let index = [HPACKStaticIndex.authority, HPACKStaticIndex.path, HPACKStaticIndex.contentLength,
                             HPACKStaticIndex.contentType][Int(reader.byte()) % 4]
                let value = fieldBytes(&reader, length: Int(reader.byte()) * 2)
                block.writeHPACKLiteral(nameIndex: index, value: value)
                expected.append((staticEntry(index).0, String(decoding: value, as: UTF8.self)))
            default:
                let name = fieldBytes(&reader, length: Int(reader.byte() % 40) + 1).map { lowercaseToken($0) }
                // Input ran out: a field needs a name (RFC 7541 §7.2 forbids empty ones), so stop here.
                if name.isEmpty { break fields }
                let value = fieldBytes(&reader, length: Int(reader.byte()) * 2)
                block.writeHPACKLiteral(name: name, value: value)
                expected.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
            }
        }
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 4096, maxHeaderListSize: 1 << 20)
        let decoded: HPACKHeaders
        do {
            decoded = try decoder.decodeHeaders(from: &block)
        } catch {
            return FuzzFinding(.hpack, "Herald's literals decode", "\(error)")
        }
        let fields = decoded.map { ($0.name, $0.value) }
        guard fields.count == expected.count, zip(fields, expected).allSatisfy({ $0 == $1 }) else {
            return FuzzFinding(.hpack, "Herald's literals decode to the fields written", "\(fields) vs \(expected)")
        }
        return nil
    }

    /// Field bytes that survive a decode as text: printable ASCII, so String comparison is byte comparison.
    private static func fieldBytes(_ reader: inout FuzzInput, length: Int) -> [UInt8] {
        reader.take(length).map { 0x20 + $0 % 0x5F }
    }

    private static func lowercaseToken(_ byte: UInt8) -> UInt8 {
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789-".utf8)
        return letters[Int(byte) % letters.count]
    }

    private static func staticEntry(_ index: Int) -> (String, String) {
        switch index {
        case HPACKStaticIndex.authority: (":authority", "")
        case HPACKStaticIndex.methodPost: (":method", "POST")
        case HPACKStaticIndex.path: (":path", "/")
        case HPACKStaticIndex.schemeHTTPS: (":scheme", "https")
        case HPACKStaticIndex.status200: (":status", "200")
        case HPACKStaticIndex.contentLength: ("content-length", "")
        default: ("content-type", "")
        }
    }
}
