public import Foundation
import Crypto

/// Herald's end-to-end envelope for notification content: AES-256-GCM with a per-app key.
///
/// Text form: `hx1.<key id>.<base64url(nonce ‖ ciphertext ‖ tag)>`, with a random 12-byte nonce and the 16-byte GCM
/// tag. The prefix `hx1.<key id>` is authenticated as associated data, so neither the version nor the key id can be
/// swapped. The format is documented in docs/encryption.md.
public enum ContentEnvelope {
    /// The version marker at the start of every envelope.
    public static let version = "hx1"

    /// Encrypts bytes under a key.
    public static func seal(_ plaintext: some DataProtocol, with key: ContentEncryptionKey) -> String {
        let header = version + "." + key.id
        // AES-GCM sealing only fails for an invalid key size or nonce, both fixed here.
        let box = try! AES.GCM.seal(plaintext, using: key.key, authenticating: Data(header.utf8))
        return header + "." + Base64URL.encode(box.combined!)
    }

    /// Decrypts an envelope with whichever of the keys its id names.
    /// - Throws: ``ContentEnvelopeError`` when the text is not an envelope, no key has its id, or the ciphertext was
    ///   altered or sealed with another key.
    public static func open(_ envelope: String, keys: [ContentEncryptionKey]) throws(ContentEnvelopeError) -> Data {
        let parts = envelope.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == version else {
            throw ContentEnvelopeError(.malformed, "The text is not a Herald envelope (hx1.<key id>.<data>).")
        }
        guard let key = keys.first(where: { $0.id == parts[1] }) else {
            throw ContentEnvelopeError(.unknownKey, "The content was encrypted with key \"\(parts[1])\", which this app does not have: add that key (or roll back the server's key).")
        }
        guard let combined = Base64URL.decode(parts[2]), combined.count >= 12 + 16,
            let box = try? AES.GCM.SealedBox(combined: combined)
        else {
            throw ContentEnvelopeError(.malformed, "The envelope's data is not base64url of nonce, ciphertext and tag.")
        }
        do {
            return try AES.GCM.open(box, using: key.key, authenticating: Data("\(version).\(key.id)".utf8))
        } catch {
            throw ContentEnvelopeError(.authenticationFailed, "The envelope does not decrypt with key \"\(key.id)\": it was altered in transit, or sealed with a different key under the same id.")
        }
    }
}

/// Why content could not be sealed or opened.
public struct ContentEnvelopeError: CodedError, Hashable {
    public typealias Code = ErrorCode<ContentEnvelopeError>

    public let code: Code
    public let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

extension ErrorCode where Domain == ContentEnvelopeError {
    public static let badKey = Self("badKey")
    public static let badKeyID = Self("badKeyID")
    public static let malformed = Self("malformed")
    public static let unknownKey = Self("unknownKey")
    public static let authenticationFailed = Self("authenticationFailed")
    public static let notEncrypted = Self("notEncrypted")
    public static let nothingToEncrypt = Self("nothingToEncrypt")
}
