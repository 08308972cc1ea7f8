import HeraldCore

enum JSONFuzzing {
    static func check(_ input: [UInt8]) -> FuzzFinding? {
        guard let value = try? JSONValue(parsing: input) else { return nil }
        let written = value.jsonBytes
        let reread: JSONValue
        do {
            reread = try JSONValue(parsing: written)
        } catch {
            return FuzzFinding(.json, "written JSON parses", "\(error) in \(String(decoding: written, as: UTF8.self))")
        }
        guard reread == value else {
            return FuzzFinding(.json, "written JSON parses to the same value", String(decoding: written, as: UTF8.self))
        }
        return nil
    }
}
