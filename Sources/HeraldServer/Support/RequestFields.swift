import HeraldCore
import Hummingbird

/// The JSON object body of a request that takes a fixed set of keys: the activity and channel endpoints.
enum RequestFields {
    /// A JSON object body with only the given keys; an end may have none.
    static func read(_ request: Request, limit: Int, allowed: Set<String>, emptyAllowed: Bool = false)
        async throws -> JSONFields
    {
        let bytes = try await request.bodyBytes(limit: limit)
        if emptyAllowed, bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            return JSONFields([:])
        }
        let fields = try JSONFields(body: bytes)
        try TextRules.checkNoNUL(in: .object(fields.members))
        if let unknown = fields.members.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw APIError.invalidField(
                unknown, "it is not a field of this request: use \(allowed.sorted().joined(separator: ", "))")
        }
        return fields
    }
}
