public import HeraldCore

/// The inputs the benchmarks and the profiling driver share, so both measure the same work.
public enum CoreFixtures {
    /// A typical alert: title, body, badge, sound, thread id and one custom key; 203 bytes encoded.
    public static let payload = Payload(
        aps: APS(
            alert: .content(AlertContent(
                title: "Your order has shipped",
                body: "Order A-1042 left our warehouse today and should arrive on Thursday.")),
            badge: 3, sound: .default, threadID: "orders"),
        custom: ["orderID": "A-1042-7731"])

    public static let topic = "com.example.shop"

    /// A 32-byte token (the common size), in lower case.
    public static let shortTokenHex = String(repeating: "0123456789abcdef", count: 4)
    /// A 100-byte token (Apple says not to assume a size), in upper case.
    public static let longTokenHex = String(repeating: "0123456789ABCDEF", count: 12) + "a1b2c3d4"
}
