import Foundation
import HeraldCore
import Testing

@Suite("Time-ordered UUIDs")
struct TimeOrderedUUIDTests {
    @Test("carry version 7, the RFC 9562 variant and the time in milliseconds")
    func layout() {
        let date = Date(timeIntervalSince1970: 1_795_000_000.123)
        let uuid = UUID.timeOrdered(at: date)
        let bytes = uuid.uuid
        #expect(bytes.6 >> 4 == 7)
        #expect(bytes.8 >> 6 == 0b10)
        #expect(uuid.timeOrderedMilliseconds == 1_795_000_000_123)
        #expect(uuid.uuidString.lowercased().hasPrefix("01a1ee56-5e7b-7"), "\(uuid)")  // 1,795,000,000,123 = 0x01A1EE565E7B
        #expect(UUID(uuidString: "f47ac10b-58cc-4372-a567-0e02b2c3d479")?.timeOrderedMilliseconds == nil, "version 4")
    }

    @Test("sort by the time they were made, as lowercase and uppercase text")
    func order() {
        var generator = SeededRandomNumberGenerator(seed: 7)
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let ids = (0..<1000).map { UUID.timeOrdered(at: start + Double($0) * 0.001, using: &generator) }
        let lowercase = ids.map { $0.uuidString.lowercased() }
        let uppercase = ids.map(\.uuidString)
        let (lowercaseSorted, uppercaseSorted) = (lowercase == lowercase.sorted(), uppercase == uppercase.sorted())
        #expect(lowercaseSorted, "lowercase text sorts by time")
        #expect(uppercaseSorted, "uppercase text sorts by time")
        let timesKept = ids.map(\.timeOrderedMilliseconds) == (0..<1000).map { 1_700_000_000_000 + UInt64($0) }
        #expect(timesKept, "each id carries its millisecond")
        #expect(Set(ids).count == ids.count)
    }

    @Test("differ within one millisecond: 74 random bits")
    func random() {
        let date = Date()
        let ids = (0..<10_000).map { _ in UUID.timeOrdered(at: date) }
        #expect(Set(ids).count == ids.count)
        #expect(Set(ids.map(\.timeOrderedMilliseconds)).count == 1)
    }

    @Test("clamp times before 1970 to zero")
    func clamp() {
        #expect(UUID.timeOrdered(at: Date(timeIntervalSince1970: -5)).timeOrderedMilliseconds == 0)
    }
}
