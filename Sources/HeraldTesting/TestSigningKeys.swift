public import Crypto
public import HeraldCore

/// Ready-made provider signing keys for tests and local runs; never used against Apple.
public enum TestSigningKeys {
    /// A new random key with the given ids.
    public static func make(keyID: String = "TESTKEY001", teamID: String = "TESTTEAM01") -> ProviderSigningKey {
        // The ids above are valid 10-character identifiers.
        try! ProviderSigningKey(privateKey: P256.Signing.PrivateKey(), keyID: keyID, teamID: teamID)
    }

    /// A PKCS#8 PEM `.p8` text and its key, for tests that go through files.
    public static func makePEM() -> (pem: String, key: P256.Signing.PrivateKey) {
        let key = P256.Signing.PrivateKey()
        return (key.pemRepresentation, key)
    }
}
