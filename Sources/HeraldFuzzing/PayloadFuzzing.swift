import HeraldCore

enum PayloadFuzzing {
    static func check(_ input: [UInt8]) -> FuzzFinding? {
        var reader = FuzzInput(input)
        let pushType = APNSPushType.allCases[Int(reader.byte()) % APNSPushType.allCases.count]
        let priorities: [APNSPriority?] = [nil] + APNSPriority.allCases.map { $0 }
        let priority = priorities[Int(reader.byte()) % priorities.count]
        let json = reader.rest()
        guard let payload = try? Payload(jsonBytes: json) else { return nil }
        let written = payload.jsonBytes()
        let reread: Payload
        do {
            reread = try Payload(jsonBytes: written)
        } catch {
            return FuzzFinding(.payload, "an encoded payload decodes", "\(error)")
        }
        guard reread == payload else {
            return FuzzFinding(.payload, "an encoded payload decodes to the same payload",
                               String(decoding: written, as: UTF8.self))
        }
        let topic = pushType.topic(forBundleID: "com.example.app")
        for body in [PushNotification.Body.payload(payload), .raw(json)] {
            let notification = PushNotification(body: body, pushType: pushType, topic: topic, priority: priority)
            guard let prepared = try? notification.prepare() else { continue }
            if prepared.body.count > pushType.maximumPayloadSize {
                return FuzzFinding(.payload, "a prepared body fits its push type",
                                   "\(prepared.body.count) bytes for \(pushType)")
            }
        }
        return nil
    }
}
