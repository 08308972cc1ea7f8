import HeraldCore

enum DeviceTokenFuzzing {
    static func check(_ input: [UInt8]) -> FuzzFinding? {
        if let token = try? DeviceToken(hex: String(decoding: input, as: UTF8.self)), let finding = verify(token) {
            return finding
        }
        if let token = try? DeviceToken(data: input) {
            if Array(token.data) != input {
                return FuzzFinding(.deviceToken, "a token from bytes keeps them", token.hex)
            }
            return verify(token)
        }
        return nil
    }

    private static func verify(_ token: DeviceToken) -> FuzzFinding? {
        let range = DeviceToken.minimumByteCount...DeviceToken.maximumByteCount
        guard range.contains(token.byteCount), token.data.count == token.byteCount else {
            return FuzzFinding(.deviceToken, "a token is 8–512 bytes", "\(token.byteCount) bytes")
        }
        guard token.hex.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            return FuzzFinding(.deviceToken, "a token's hex is lowercase digits", token.hex)
        }
        guard (try? DeviceToken(hex: token.hex)) == token, (try? DeviceToken(data: token.data)) == token else {
            return FuzzFinding(.deviceToken, "a token reads back from its hex and its bytes", token.hex)
        }
        return nil
    }
}
