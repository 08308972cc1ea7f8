import Foundation
public import HeraldCore

extension JSONValue {
    /// Decodes the value as `T` with `JSONDecoder`'s default strategies.
    ///
    /// The defaults are deliberate: ActivityKit decodes `content-state` and `attributes` with them, so a `Date` is
    /// seconds since 2001-01-01 (not 1970) and keys are matched exactly (no snake-case conversion). What decodes here
    /// decodes on the device.
    /// - Parameters:
    ///   - type: the type to decode, such as `DeliveryAttributes.ContentState.self`.
    ///   - path: where the value sits, used in error messages (`aps.content-state`).
    /// - Throws: ``NotificationDecodingError`` (`decodingFailed`) naming the path of the first value that does not
    ///   fit: a missing key, a wrong type, or an invalid value.
    public func decode<T: Decodable>(_ type: T.Type = T.self, path: String = "value") throws(NotificationDecodingError)
        -> T
    {
        do {
            return try JSONDecoder().decode(T.self, from: Data(jsonBytes))
        } catch let error as DecodingError {
            throw Self.decodingFailure(error, type: T.self, path: path)
        } catch {
            throw NotificationDecodingError(
                .decodingFailed, path: path, "\(path) does not decode as \(T.self): \(error.localizedDescription).")
        }
    }

    /// Names the failing path in the payload's own terms (`aps.content-state.eta`) and says what to fix.
    private static func decodingFailure(
        _ error: DecodingError, type: Any.Type, path: String
    ) -> NotificationDecodingError {
        func location(_ codingPath: [any CodingKey]) -> String {
            codingPath.reduce(path) { partial, key in
                key.intValue.map { "\(partial)[\($0)]" } ?? "\(partial).\(key.stringValue)"
            }
        }
        let at: String
        let problem: String
        switch error {
        case .keyNotFound(let key, let context):
            at = location(context.codingPath + [key])
            problem = "\(at) is missing"
        case .typeMismatch(let expected, let context):
            at = location(context.codingPath)
            problem = "\(at) is not \(expected)"
        case .valueNotFound(let expected, let context):
            at = location(context.codingPath)
            problem = "\(at) is null where \(expected) is expected"
        case .dataCorrupted(let context):
            at = location(context.codingPath)
            problem = "\(at) is invalid (\(context.debugDescription))"
        @unknown default:
            at = path
            problem = "\(path) is invalid (\(error.localizedDescription))"
        }
        return NotificationDecodingError(
            .decodingFailed, path: at,
            "\(problem), so \(path) does not decode as \(type): send it in the shape of that type, with the same key names, and dates as seconds since 2001-01-01 (JSONDecoder's default)."
        )
    }
}
