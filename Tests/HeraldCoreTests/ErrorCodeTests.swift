import HeraldCore
import Testing

/// A domain of its own, declared the way Herald's error types declare theirs.
private struct SampleError: CodedError, Hashable {
    typealias Code = ErrorCode<SampleError>
    let code: Code
    let message: String
}

extension ErrorCode where Domain == SampleError {
    static let first = Self("first")
    static let second = Self("second")
}

/// A second domain with a code of the same name, to show the two stay apart.
private struct OtherError: CodedError {
    typealias Code = ErrorCode<OtherError>
    let code: Code
    let message: String
    var description: String { "other: \(message)" }
}

extension ErrorCode where Domain == OtherError {
    static let first = Self("first")
}

@Suite("Error codes")
struct ErrorCodeTests {
    @Test("codes of one domain are equal when their names are")
    func equality() {
        #expect(SampleError.Code.first == ErrorCode<SampleError>("first"))
        #expect(SampleError.Code.first != .second)
        #expect(Set<SampleError.Code>([.first, .second, ErrorCode("first")]).count == 2)
        #expect(SampleError(code: .first, message: "a") == SampleError(code: .first, message: "a"))
        #expect(SampleError(code: .first, message: "a") != SampleError(code: .second, message: "a"))
    }

    @Test("codes of different domains are different types")
    func domains() {
        #expect(SampleError.Code.self != OtherError.Code.self)
        #expect(ContentEnvelopeError.Code.self != ProviderKeyError.Code.self)
        // Same name, different domain: both exist, neither converts to the other.
        #expect(SampleError.Code.first.description == OtherError.Code.first.description)
    }

    @Test("description is the name")
    func description() {
        #expect(SampleError.Code.second.description == "second")
        #expect("\(SampleError.Code.first)" == "first")
        #expect(ContentEnvelopeError.Code.authenticationFailed.description == "authenticationFailed")
        #expect(ProviderKeyError.Code.badTeamID.description == "badTeamID")
        #expect(NotificationValidationError.Code.topicDoesNotMatchPushType.description == "topicDoesNotMatchPushType")
    }

    @Test("a code works in a switch")
    func switching() {
        func label(_ code: SampleError.Code) -> String {
            switch code {
            case .first: "one"
            case .second: "two"
            default: "other"
            }
        }
        #expect(label(.first) == "one")
        #expect(label(.second) == "two")
        #expect(label(ErrorCode("third")) == "other")
    }

    @Test("an error's description is its message unless it says otherwise")
    func errorDescription() {
        #expect(SampleError(code: .first, message: "What went wrong.").description == "What went wrong.")
        #expect(OtherError(code: .first, message: "x").description == "other: x")
        let error = NotificationValidationError(
            .badPriority, field: "apns-priority", reason: .badPriority, message: "Use 1, 5 or 10.")
        #expect(error.code == .badPriority)
        #expect(error.description == "apns-priority: Use 1, 5 or 10. (APNs: BadPriority)")
    }

    @Test("codes are readable through the protocol")
    func throughProtocol() {
        func codeName<E: CodedError>(_ error: E) -> String { error.code.description }
        #expect(codeName(SampleError(code: .second, message: "")) == "second")
        #expect(codeName(OtherError(code: .first, message: "")) == "first")
    }
}
