public import HeraldStore

/// A kind of notification an app sends (`orders`, `social`, `marketing`), which the person holding the phone may
/// turn off unless it is mandatory. Declared per app in the server's configuration; a send names one.
public struct PreferenceCategory: Sendable, Hashable, CustomStringConvertible {
    /// The longest name, in bytes.
    public static let maximumNameBytes = 64

    /// How a category treats a person who made no choice, and whether a choice counts.
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// Never suppressed: security codes, receipts, what the person asked for.
        case mandatory
        /// Sent unless the person turned it off.
        case on
        /// Sent only once the person turned it on.
        case off
    }

    /// Its name: letters, digits, `.`, `_` and `-`.
    public let name: String
    public let mode: Mode

    /// - Throws: ``PreferenceCategoryError`` when the name is empty, too long or holds other characters.
    public init(name: String, mode: Mode) throws(PreferenceCategoryError) {
        guard Self.isValidName(name) else { throw PreferenceCategoryError(name: name) }
        self.name = name
        self.mode = mode
    }

    /// Whether a name can name a category.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumNameBytes
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }

    /// The device query's rule for a send of this category; `nil` for a mandatory one, which every device gets.
    public var filter: PreferenceFilter? {
        switch mode {
        case .mandatory: nil
        case .on: PreferenceFilter(category: name, enabledByDefault: true)
        case .off: PreferenceFilter(category: name, enabledByDefault: false)
        }
    }

    /// Whether a person who made no choice gets it.
    public var enabledByDefault: Bool { mode != .off }

    /// As the configuration writes it: `orders:mandatory`, `social`, `marketing:off`.
    public var description: String { mode == .on ? name : "\(name):\(mode.rawValue)" }
}

extension [PreferenceCategory] {
    /// The category of this name, if declared.
    public func named(_ name: String) -> PreferenceCategory? { first { $0.name == name } }
}

/// A category name that cannot be used.
public struct PreferenceCategoryError: Error, Sendable, CustomStringConvertible {
    public let name: String

    public var description: String {
        "\"\(name)\" cannot name a preference category: use 1 to \(PreferenceCategory.maximumNameBytes) letters, digits, '.', '_' or '-'."
    }
}
