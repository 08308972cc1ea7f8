extension Payload {
    /// The custom key that carries the sealed content.
    public static let encryptedContentKey = "herald-encrypted"

    /// The alert shown when the app's notification service extension cannot run (for example, the device is
    /// locked before first unlock): the real text is never shown in clear.
    public static let defaultEncryptedPlaceholder = AlertContent(title: nil, body: "New message")

    /// Moves the alert text and the chosen custom keys into an encrypted envelope.
    ///
    /// The result shows `placeholder` unless the app's notification service extension decrypts it, and has
    /// `mutable-content: 1` so the extension runs. ``decryptingContent(using:)`` restores the original exactly.
    /// - Parameters:
    ///   - key: the app's content key.
    ///   - customKeys: keys beside `aps` to encrypt too; keys the payload lacks are ignored.
    ///   - placeholder: what to show if the extension does not run.
    /// - Throws: ``ContentEnvelopeError`` (`nothingToEncrypt`) when there is no alert and none of the custom keys.
    public func encryptingContent(
        with key: ContentEncryptionKey, customKeys: Set<String> = [],
        placeholder: AlertContent = Payload.defaultEncryptedPlaceholder
    ) throws(ContentEnvelopeError) -> Payload {
        let movedKeys = customKeys.intersection(custom.keys)
        guard aps.alert != nil || !movedKeys.isEmpty else {
            throw ContentEnvelopeError(.nothingToEncrypt, "There is nothing to encrypt: the payload has no alert and none of the custom keys named.")
        }
        var sealed = [String: JSONValue]()
        var result = self
        if let alert = aps.alert {
            var writer = JSONWriter(capacity: 128)
            switch alert {
            case .body(let text): writer.string(text)
            case .content(let content): content.write(to: &writer)
            }
            // Re-parsing our own output cannot fail.
            sealed["alert"] = try! JSONValue(parsing: writer.bytes)
            result.aps.alert = .content(placeholder)
        }
        var moved = [String: JSONValue]()
        for name in movedKeys {
            moved[name] = result.custom.removeValue(forKey: name)
        }
        if !moved.isEmpty { sealed["custom"] = .object(moved) }
        sealed["mutable-content"] = .bool(aps.mutableContent)
        result.aps.mutableContent = true
        result.custom[Self.encryptedContentKey] = .string(ContentEnvelope.seal(JSONValue.object(sealed).jsonBytes, with: key))
        return result
    }

    /// Whether the payload carries encrypted content.
    public var hasEncryptedContent: Bool { custom[Self.encryptedContentKey] != nil }

    /// Restores a payload made by ``encryptingContent(with:customKeys:placeholder:)``.
    /// - Throws: ``ContentEnvelopeError`` when there is no envelope, no matching key, or the envelope was altered.
    public func decryptingContent(using keys: [ContentEncryptionKey]) throws(ContentEnvelopeError) -> Payload {
        guard let envelope = custom[Self.encryptedContentKey]?.stringValue else {
            throw ContentEnvelopeError(.notEncrypted, "The payload has no \(Self.encryptedContentKey) key: it was not encrypted by Herald.")
        }
        let plaintext = try ContentEnvelope.open(envelope, keys: keys)
        guard let sealed = try? JSONValue(parsing: plaintext), case .object(let fields) = sealed else {
            throw ContentEnvelopeError(.malformed, "The decrypted content is not the JSON object Herald seals.")
        }
        var result = self
        result.custom.removeValue(forKey: Self.encryptedContentKey)
        switch fields["alert"] {
        case .string(let text)?:
            result.aps.alert = .body(text)
        case .object(let members)?:
            guard let content = try? AlertContent(members: members) else {
                throw ContentEnvelopeError(.malformed, "The decrypted alert is not a valid alert dictionary.")
            }
            result.aps.alert = .content(content)
        default:
            break
        }
        if case .object(let moved)? = fields["custom"] {
            for (name, value) in moved { result.custom[name] = value }
        }
        if let mutable = fields["mutable-content"]?.boolValue { result.aps.mutableContent = mutable }
        return result
    }
}
