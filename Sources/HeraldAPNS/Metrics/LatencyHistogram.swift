/// Latencies counted in logarithmic buckets, for percentiles whose error is bounded whatever the traffic.
///
/// Buckets are in microseconds. Below 8 µs each microsecond has its own bucket; from 8 µs on, every power of two is
/// split into 8 equal buckets, so a bucket is at most 12.5 % as wide as its lower edge. Everything from 62.9 s up
/// shares the last bucket (a request to APNs has long hit its deadline by then). A percentile is the upper edge of the
/// bucket holding it: the true value is at most that, and more than the bucket's lower edge.
public struct LatencyHistogram: Sendable, Hashable {
    /// How many buckets there are: 8 single microseconds, then 8 per power of two from 2³ to 2²⁵ µs.
    public static let bucketCount = 192
    /// Samples from this many microseconds up (2²⁶ µs, 67.1 s) are counted in the last bucket.
    static let ceiling: UInt64 = 1 << 26

    /// The samples in each bucket.
    public private(set) var counts: [UInt64]
    /// How many samples there are.
    public private(set) var count: UInt64

    /// An empty histogram.
    public init() {
        counts = Array(repeating: 0, count: Self.bucketCount)
        count = 0
    }

    /// The bucket a latency falls in: O(1), one count of leading zeros.
    @inline(__always)
    static func bucket(microseconds: UInt64) -> Int {
        let value = min(microseconds, ceiling - 1)
        if value < 8 { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount
        let step = (value >> (exponent - 3)) & 7
        return 8 * (exponent - 2) + Int(step)
    }

    /// The microseconds a bucket holds: from its lower edge (included) to its upper edge (excluded).
    static func bounds(ofBucket index: Int) -> Range<UInt64> {
        precondition((0..<bucketCount).contains(index), "no bucket \(index)")
        if index < 8 { return UInt64(index)..<UInt64(index + 1) }
        let shift = UInt64(index / 8 - 1)
        let step = UInt64(index % 8)
        return (8 + step) << shift..<(9 + step) << shift
    }

    /// Counts one latency.
    public mutating func record(microseconds: UInt64) {
        counts[Self.bucket(microseconds: microseconds)] += 1
        count += 1
    }

    /// Adds another histogram's samples (the histograms of an hour, of a client) to these.
    public mutating func merge(_ other: LatencyHistogram) {
        for index in counts.indices { counts[index] += other.counts[index] }
        count += other.count
    }

    /// The latency under which a share of the samples fall (nearest rank): the upper edge of the bucket holding the
    /// sample of rank ⌈share × count⌉.
    /// - Parameter share: 0.5 for the median, 0.99 for p99; clamped to 0…1.
    /// - Returns: `nil` without samples.
    public func percentile(_ share: Double) -> Duration? {
        guard count > 0 else { return nil }
        let clamped = min(max(share, 0), 1)
        let rank = max(1, UInt64((clamped * Double(count)).rounded(.up)))
        var seen: UInt64 = 0
        for (index, bucketCount) in counts.enumerated() {
            seen += bucketCount
            if seen >= rank { return .microseconds(Int64(Self.bounds(ofBucket: index).upperBound)) }
        }
        return .microseconds(Int64(Self.ceiling))
    }
}
