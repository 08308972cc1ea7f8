extension JSONValue {
    /// The compact encoding with every object's members in name order, nested objects included: the stable key order
    /// that API answers need. ``jsonBytes`` follows the dictionary, whose order changes from one process to the next
    /// (fine for payloads, whose readers do not care, and cheaper).
    public var sortedJSONBytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        appendSorted(to: &bytes)
        return bytes
    }

    private func appendSorted(to bytes: inout [UInt8]) {
        switch self {
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (index, name) in members.keys.sorted().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += JSONValue.string(name).jsonBytes
                bytes.append(UInt8(ascii: ":"))
                members[name]!.appendSorted(to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                element.appendSorted(to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        default:
            bytes += jsonBytes
        }
    }
}
