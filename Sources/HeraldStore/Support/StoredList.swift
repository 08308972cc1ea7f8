import HeraldCore

/// How SQLite keeps a list of strings (tags, languages) in one column: a JSON array.
package enum StoredList {
    /// The JSON array of the strings.
    package static func encode(_ values: [String]) -> String {
        JSONValue.array(values.map(JSONValue.string)).jsonString
    }

    /// The strings of a JSON array.
    /// - Throws: ``StoreError`` `.corruptRecord` when the text is not a JSON array of strings.
    package static func decode(_ text: String) throws -> [String] {
        if text == "[]" { return [] }
        guard let items = (try? JSONValue(parsing: text))?.arrayValue else {
            throw StoreError(.corruptRecord, "A stored list is not a JSON array: repair or delete the row.")
        }
        return try items.map { item in
            guard let value = item.stringValue else {
                throw StoreError(.corruptRecord, "A stored list holds a value that is not a string.")
            }
            return value
        }
    }
}

/// A yes-or-no a device reported, as `devices` keeps it: `yes`, `no`, or NULL when not reported (migration 33). Text,
/// since PostgreSQL's `herald_register` takes every registration column as text.
package enum StoredFlag {
    package static func text(_ flag: Bool) -> String { flag ? "yes" : "no" }

    package static func value(_ text: String?) -> Bool? {
        switch text {
        case "yes": true
        case "no": false
        default: nil
        }
    }
}
