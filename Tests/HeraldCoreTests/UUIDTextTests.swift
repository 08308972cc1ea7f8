import Foundation
import HeraldCore
import Testing

@Suite("UUID text")
struct UUIDTextTests {
    @Test("writes and reads what Foundation writes and reads, in either case")
    func foundationAgreement() {
        var generator = SeededRandomNumberGenerator(seed: 11)
        for _ in 0..<2000 {
            let uuid = UUID(high: generator.next(), low: generator.next())
            #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
            #expect(UUID(text: uuid.uuidString) == uuid)
            #expect(UUID(text: uuid.lowercasedText) == uuid)
            #expect(UUID(uuidString: uuid.lowercasedText) == uuid)
            #expect(UUID(lowercasedText: uuid.lowercasedText) == uuid)
            #expect(UUID(text: "<\(uuid.uuidString)>".dropFirst().dropLast()) == uuid)
        }
        #expect(UUID(high: 0, low: 0).lowercasedText == "00000000-0000-0000-0000-000000000000")
        #expect(UUID(high: .max, low: .max).lowercasedText == "ffffffff-ffff-ffff-ffff-ffffffffffff")
        #expect(UUID(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210).halves == (0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210))
    }

    @Test(
        "refuses what is not the 8-4-4-4-12 form",
        arguments: [
            "", "0", "01234567-89ab-cdef-0123-456789abcde", "01234567-89ab-cdef-0123-456789abcdef0",
            "0123456789ab-cdef-0123-456789abcdef-", "01234567+89ab-cdef-0123-456789abcdef",
            "01234567-89ab-cdeg-0123-456789abcdef", "01234567-89ab-cdef-0123-456789abcdé",
            " 1234567-89ab-cdef-0123-456789abcdef", "{01234567-89ab-cdef-0123-456789abcdef}",
            "0123456789abcdef0123456789abcdef",
        ])
    func malformed(_ text: String) {
        #expect(UUID(text: text) == nil)
        #expect(UUID(lowercasedText: text) == nil)
        // Foundation's sscanf skips a leading space and misreads the rest (as 12345607-…); every other case it refuses.
        if !text.hasPrefix(" ") { #expect(UUID(uuidString: text) == nil) }
    }

    @Test("reads the lowercase form alone when asked to, so that its bytes spell the text again")
    func lowercaseOnly() {
        let lower = "0123abcd-89ab-cdef-0123-456789abcdef"
        #expect(UUID(lowercasedText: lower)?.lowercasedText == lower)
        for upper in ["0123ABCD-89ab-cdef-0123-456789abcdef", "0123abcd-89ab-cdef-0123-456789abcdeF"] {
            #expect(UUID(lowercasedText: upper) == nil)
            #expect(UUID(text: upper)?.lowercasedText == lower)
        }
    }
}
