import Foundation
import HeraldCore
import Hummingbird

/// What text the API accepts in fields that are stored or matched: no control characters in identifiers
/// (user ids, tags, topics, versions, query parameters), and no NUL anywhere.
///
/// SQLite cuts a text value at a NUL while the answer would echo the whole value, and PostgreSQL refuses it (SQLSTATE
/// 22021), so a NUL is refused here, before either backend sees it, with a `400` that names the field.
enum TextRules {
    /// Whether the text has a Unicode control character (category Cc: U+0000–U+001F, U+007F–U+009F).
    static func hasControlCharacter(_ text: some StringProtocol) -> Bool {
        RegistrationRules.hasControlCharacter(text)
    }

    /// Refuses an identifier with a control character.
    /// - Throws: ``APIError`` `400 invalidField` naming `field`.
    static func checkIdentifier(_ text: String?, field: String) throws(APIError) {
        guard let text, hasControlCharacter(text) else { return }
        throw APIError.invalidField(field, "it has a control character (such as NUL or a line break): send plain text")
    }

    /// The dotted path of the first string or member name in `value` that contains a NUL, or `nil`.
    static func pathOfNUL(in value: JSONValue, at path: String = "") -> String? {
        switch value {
        case .string(let text):
            return text.unicodeScalars.contains("\u{0}") ? (path.isEmpty ? "(body)" : path) : nil
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                if let found = pathOfNUL(in: element, at: "\(path)[\(index)]") { return found }
            }
            return nil
        case .object(let members):
            for name in members.keys.sorted() {
                let inner = path.isEmpty ? name : "\(path).\(name)"
                if name.unicodeScalars.contains("\u{0}") { return inner }
                if let found = pathOfNUL(in: members[name]!, at: inner) { return found }
            }
            return nil
        default:
            return nil
        }
    }

    /// Refuses a JSON body with a NUL in any string or member name.
    /// - Throws: ``APIError`` `400 invalidField` naming the field's path, such as `alert.title`.
    static func checkNoNUL(in value: JSONValue) throws(APIError) {
        if let path = pathOfNUL(in: value) {
            throw APIError.invalidField(
                path.replacingOccurrences(of: "\u{0}", with: "\\u0000"),
                "it contains a NUL character (\\u0000): remove it")
        }
    }
}

extension Request {
    /// A query parameter, refused with `400 invalidField` when it has a control character (a `%00`, a line break).
    /// `nil` when absent.
    func queryParameter(_ name: String) throws(APIError) -> String? {
        let value = uri.queryParameters.get(name)
        try TextRules.checkIdentifier(value, field: name)
        return value
    }
}
