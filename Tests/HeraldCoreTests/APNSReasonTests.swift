import HeraldCore
import Testing

@Suite("APNs reasons")
struct APNSReasonTests {
    @Test("every documented reason has its status", arguments: [
        ("BadCollapseId", 400), ("BadDeviceToken", 400), ("BadExpirationDate", 400), ("BadMessageId", 400),
        ("BadPriority", 400), ("BadTopic", 400), ("DeviceTokenNotForTopic", 400), ("DuplicateHeaders", 400),
        ("IdleTimeout", 400), ("InvalidPushType", 400), ("MissingDeviceToken", 400), ("MissingTopic", 400),
        ("PayloadEmpty", 400), ("TopicDisallowed", 400), ("BadCertificate", 403), ("BadCertificateEnvironment", 403),
        ("ExpiredProviderToken", 403), ("Forbidden", 403), ("InvalidProviderToken", 403),
        ("MissingProviderToken", 403), ("UnrelatedKeyIdInToken", 403), ("BadEnvironmentKeyIdInToken", 403),
        ("BadEnvironmentKeyInToken", 403), ("BadPath", 404), ("MethodNotAllowed", 405), ("ExpiredToken", 410),
        ("Unregistered", 410), ("PayloadTooLarge", 413), ("TooManyProviderTokenUpdates", 429),
        ("TooManyRequests", 429), ("InternalServerError", 500), ("ServiceUnavailable", 503), ("Shutdown", 503),
    ])
    func status(reason: String, status: Int) {
        let value = APNSReason(rawValue: reason)
        #expect(value.isKnown)
        #expect(value.status == status)
        #expect(APNSReason.devicePushReasons.contains(value))
        #expect(!value.explanation.isEmpty)
    }

    @Test("retry policy follows Apple's table")
    func retry() {
        for reason in [APNSReason.tooManyRequests, .internalServerError, .serviceUnavailable] {
            #expect(reason.retry == .withBackoff)
        }
        #expect(APNSReason.shutdown.retry == .onAnotherConnection)
        #expect(APNSReason.expiredProviderToken.retry == .afterRefreshingProviderToken)
        for reason in [APNSReason.badDeviceToken, .deviceTokenNotForTopic, .forbidden, .expiredToken, .unregistered,
                       .payloadTooLarge, .badTopic, .invalidProviderToken] {
            #expect(!reason.isRetryable, "\(reason) must never be retried")
        }
    }

    @Test("only Unregistered and ExpiredToken invalidate a token; BadDeviceToken suggests the other environment")
    func invalidation() {
        let invalidating = APNSReason.devicePushReasons.filter(\.invalidatesToken)
        #expect(Set(invalidating) == [.unregistered, .expiredToken])
        #expect(APNSReason.badDeviceToken.suggestsEnvironmentMismatch)
        #expect(!APNSReason.unregistered.suggestsEnvironmentMismatch)
    }

    @Test("unknown reasons are kept as text and treated conservatively")
    func unknown() {
        let reason = APNSReason(rawValue: "SomethingNew")
        #expect(!reason.isKnown)
        #expect(reason.status == nil)
        #expect(!reason.isRetryable && !reason.invalidatesToken)
        #expect(reason.description == "SomethingNew")
        #expect(reason.explanation.contains("SomethingNew"))
    }
}
