import DequeModule
import HeraldHTTP2
import NIOCore

/// Header fields that many requests repeat (`:authority`, `authorization`, `apns-topic`…), built once per kind of
/// notification and shared by every request of that kind. Immutable, so it crosses tasks freely; each connection's
/// encoder remembers where the last template's fields sit in its HPACK table.
final class APNSHeaderTemplate: Sendable {
    struct Field: Sendable, Hashable {
        let name: [UInt8]
        let value: [UInt8]
        /// Whether the field goes into the HPACK dynamic table: yes for values that repeat (a JWT, a topic), no for
        /// values that change from one notification to the next (an expiration time, a collapse id).
        let indexable: Bool

        init(_ name: String, _ value: String, indexable: Bool = true) {
            self.name = Array(name.utf8)
            self.value = Array(value.utf8)
            self.indexable = indexable
        }

        /// An HPACK table entry's size (RFC 7541 §4.1).
        var entrySize: Int { name.count + value.count + 32 }
    }

    /// The fields after `:method`, `:scheme` and `:path`, in wire order (`:authority` first: pseudo-headers precede
    /// regular ones).
    let fields: [Field]

    init(fields: [Field]) {
        self.fields = fields
    }
}

/// Encodes APNs request header blocks (RFC 7541) with a dynamic table of its own.
///
/// A request is `:method POST` and `:scheme https` from the static table, `:path` and `apns-id` as literals that are
/// never indexed (they differ on every request), and the template's fields, which are added to the dynamic table
/// the first time and sent as one-byte indices afterwards. Strings are written without Huffman coding: the
/// literals are hex and UUIDs, which Huffman shortens little, and the repeated fields cost an index anyway.
struct HPACKRequestEncoder {
    private struct Key: Hashable {
        let name: [UInt8]
        let value: [UInt8]
    }

    /// Entries in insertion order; the sequence number of `entries[i]` is `evicted + i`.
    private var entries = Deque<(key: Key, size: Int)>()
    private var sequenceOf: [Key: Int] = [:]
    private var evicted = 0
    private var size = 0
    /// The table size this encoder uses: at most the peer's `SETTINGS_HEADER_TABLE_SIZE`.
    private(set) var maximumSize: Int
    /// A size change not yet announced to the decoder (RFC 7541 §4.2, §6.3).
    private var pendingSizeUpdate: Int?
    /// The smallest size since the last header block: when the size went down and back up, the decoder must hear
    /// the smallest first, or it keeps entries this encoder already evicted (RFC 7541 §4.2).
    private var smallestPendingSize: Int?
    /// Where the last template's fields sit: their sequence numbers (nil for fields that are not indexed).
    private var lastTemplate: APNSHeaderTemplate?
    private var lastSequences: [Int?] = []
    private var lastOldestSequence = Int.max

    /// The largest table this encoder uses even when the peer allows more: the repeated fields of a few templates.
    static let preferredMaximumSize = 4096

    init(peerMaximumSize: Int = 4096) {
        maximumSize = min(peerMaximumSize, Self.preferredMaximumSize)
    }

    /// The peer's `SETTINGS_HEADER_TABLE_SIZE` changed: shrink (or grow back) and announce it in the next block.
    mutating func peerMaximumSizeChanged(to peerMaximumSize: Int) {
        let newSize = min(max(peerMaximumSize, 0), Self.preferredMaximumSize)
        guard newSize != maximumSize else { return }
        maximumSize = newSize
        pendingSizeUpdate = newSize
        smallestPendingSize = min(smallestPendingSize ?? newSize, newSize)
        evict(toFit: 0)
    }

    /// Writes one request's header block: `POST /3/device/<tokenHex>` with the template's fields and `apnsID`.
    mutating func encode(template: APNSHeaderTemplate, tokenHex: String, apnsID: String, into buffer: inout ByteBuffer) {
        writePendingSizeUpdate(into: &buffer)
        buffer.writeHPACKIndexed(HPACKStaticIndex.methodPost)
        buffer.writeHPACKIndexed(HPACKStaticIndex.schemeHTTPS)
        // Never indexed (0x10): a device token and an apns-id are useless to any table.
        buffer.writeHPACKInteger(HPACKStaticIndex.path, prefixBits: 4, pattern: 0x10)
        buffer.writeHPACKInteger(Self.pathPrefix.count + tokenHex.utf8.count, prefixBits: 7, pattern: 0)
        buffer.writeBytes(Self.pathPrefix)
        buffer.writeString(tokenHex)
        writeTemplate(template, into: &buffer)
        Self.writeNeverIndexed(name: Self.apnsIDName, value: apnsID, into: &buffer)
    }

    /// Writes the header block of a broadcast or channel-management request: `method path`, the template's fields,
    /// and `apns-request-id` (these endpoints' name for the request's identifier, apns-protocol.md §1.4).
    mutating func encode(template: APNSHeaderTemplate, method: APNSRequestTarget.Method, path: String, requestID: String, into buffer: inout ByteBuffer) {
        writePendingSizeUpdate(into: &buffer)
        switch method {
        case .get: buffer.writeHPACKIndexed(HPACKStaticIndex.methodGet)
        case .post: buffer.writeHPACKIndexed(HPACKStaticIndex.methodPost)
        case .delete: buffer.writeHPACKLiteral(nameIndex: HPACKStaticIndex.methodGet, value: "DELETE".utf8)
        }
        buffer.writeHPACKIndexed(HPACKStaticIndex.schemeHTTPS)
        buffer.writeHPACKInteger(HPACKStaticIndex.path, prefixBits: 4, pattern: 0x10)
        buffer.writeHPACKString(path.utf8)
        writeTemplate(template, into: &buffer)
        Self.writeNeverIndexed(name: Self.requestIDName, value: requestID, into: &buffer)
    }

    private mutating func writePendingSizeUpdate(into buffer: inout ByteBuffer) {
        guard let update = pendingSizeUpdate else { return }
        if let smallest = smallestPendingSize, smallest < update {
            buffer.writeHPACKInteger(smallest, prefixBits: 5, pattern: 0x20)
        }
        buffer.writeHPACKInteger(update, prefixBits: 5, pattern: 0x20)
        pendingSizeUpdate = nil
        smallestPendingSize = nil
    }

    private mutating func writeTemplate(_ template: APNSHeaderTemplate, into buffer: inout ByteBuffer) {
        if template === lastTemplate, lastOldestSequence >= evicted {
            for (field, sequence) in zip(template.fields, lastSequences) {
                if let sequence { buffer.writeHPACKIndexed(index(ofSequence: sequence)) } else { Self.writeLiteral(field, into: &buffer) }
            }
        } else {
            encodeFields(of: template, into: &buffer)
        }
    }

    /// A literal never indexed, with a literal name (RFC 7541 §6.2.3).
    private static func writeNeverIndexed(name: [UInt8], value: String, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(0x10))
        buffer.writeHPACKString(name)
        buffer.writeHPACKInteger(value.utf8.count, prefixBits: 7, pattern: 0)
        buffer.writeString(value)
    }

    private static let apnsIDName = Array("apns-id".utf8)
    private static let requestIDName = Array("apns-request-id".utf8)
    private static let pathPrefix = Array("/3/device/".utf8)

    /// The slow path: looks every field up and adds the missing ones, then remembers the template.
    private mutating func encodeFields(of template: APNSHeaderTemplate, into buffer: inout ByteBuffer) {
        var sequences: [Int?] = []
        sequences.reserveCapacity(template.fields.count)
        for field in template.fields {
            guard field.indexable, field.entrySize <= maximumSize else {
                Self.writeLiteral(field, into: &buffer)
                sequences.append(nil)
                continue
            }
            let key = Key(name: field.name, value: field.value)
            if let sequence = sequenceOf[key] {
                buffer.writeHPACKIndexed(index(ofSequence: sequence))
                sequences.append(sequence)
                continue
            }
            // Literal with incremental indexing, literal name (RFC 7541 §6.2.1).
            buffer.writeInteger(UInt8(0x40))
            buffer.writeHPACKString(field.name)
            buffer.writeHPACKString(field.value)
            evict(toFit: field.entrySize)
            let sequence = evicted + entries.count
            entries.append((key, field.entrySize))
            sequenceOf[key] = sequence
            size += field.entrySize
            sequences.append(sequence)
        }
        // Later insertions of this template can evict earlier ones of the same template only if the table is too
        // small for all of them; the oldest surviving sequence number tells.
        lastTemplate = template
        lastSequences = sequences
        lastOldestSequence = sequences.compactMap { $0 }.min() ?? Int.max
        if lastOldestSequence < evicted { lastTemplate = nil }
    }

    private static func writeLiteral(_ field: APNSHeaderTemplate.Field, into buffer: inout ByteBuffer) {
        buffer.writeHPACKLiteral(name: field.name, value: field.value)
    }

    /// The HPACK index of a live entry: 62 is the newest (RFC 7541 §2.3.3).
    private func index(ofSequence sequence: Int) -> Int {
        62 + (evicted + entries.count - 1 - sequence)
    }

    private mutating func evict(toFit incoming: Int) {
        while size + incoming > maximumSize, let oldest = entries.popFirst() {
            size -= oldest.size
            if sequenceOf[oldest.key] == evicted { sequenceOf[oldest.key] = nil }
            evicted += 1
        }
    }
}
