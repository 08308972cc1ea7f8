@testable import HeraldAPNS
import Testing

@Suite("Latency: log buckets, percentiles and the 24-hour window")
struct LatencyHistogramTests {
    @Test(
        "a latency falls in the bucket whose edges hold it; each edge starts the next bucket",
        arguments: [
            (0, 0), (7, 7), (8, 8), (15, 15), (16, 16), (17, 16), (18, 17), (31, 23), (32, 24), (35, 24), (36, 25),
            (1_000, 63), (1_023, 63), (1_024, 64), (67_108_863, 191), (67_108_864, 191), (UInt64.max, 191),
        ] as [(UInt64, Int)])
    func buckets(_ microseconds: UInt64, _ bucket: Int) {
        #expect(LatencyHistogram.bucket(microseconds: microseconds) == bucket)
        if microseconds < LatencyHistogram.ceiling {
            #expect(LatencyHistogram.bounds(ofBucket: bucket).contains(microseconds))
        }
    }

    @Test("buckets tile the range without gaps, each at most 12.5 % as wide as its lower edge")
    func tiling() {
        var expectedLower: UInt64 = 0
        for index in 0..<LatencyHistogram.bucketCount {
            let bounds = LatencyHistogram.bounds(ofBucket: index)
            #expect(bounds.lowerBound == expectedLower, "bucket \(index)")
            #expect(LatencyHistogram.bucket(microseconds: bounds.lowerBound) == index)
            #expect(LatencyHistogram.bucket(microseconds: bounds.upperBound - 1) == index)
            if index >= 8 { #expect((bounds.upperBound - bounds.lowerBound) * 8 <= bounds.lowerBound) }
            expectedLower = bounds.upperBound
        }
        #expect(expectedLower == LatencyHistogram.ceiling)
    }

    @Test("an empty histogram has no percentile")
    func empty() {
        #expect(LatencyHistogram().percentile(0.5) == nil)
        #expect(LatencyWindow().histogram(hour: 10).percentile(0.99) == nil)
    }

    @Test("percentiles are the upper edge of the bucket holding the nearest-rank sample")
    func percentiles() {
        var histogram = LatencyHistogram()
        // 98 samples at 1 ms (bucket [1 000, 1 024) µs), one at 20 ms ([18 432, 20 480) µs), one at 5 s.
        for _ in 0..<98 { histogram.record(microseconds: 1_000) }
        histogram.record(microseconds: 20_000)
        histogram.record(microseconds: 5_000_000)
        #expect(histogram.count == 100)
        #expect(histogram.percentile(0.5) == .microseconds(1_024))
        #expect(histogram.percentile(0.98) == .microseconds(1_024))
        #expect(histogram.percentile(0.99) == .microseconds(20_480))
        #expect(histogram.percentile(1) == .microseconds(5_242_880))
        #expect(histogram.percentile(0) == .microseconds(1_024), "rank 1 at least")
    }

    @Test("the window keeps 24 hours: the 24th hour back drops out, and a reused slot starts empty")
    func wrapAround() {
        var window = LatencyWindow()
        window.record(microseconds: 500, hour: 0)
        window.record(microseconds: 700, hour: 5)
        #expect(window.histogram(hour: 5).count == 2)
        #expect(window.histogram(hour: 23).count == 2)
        #expect(window.histogram(hour: 24).count == 1, "hour 0 is 24 hours back from hour 24")
        #expect(window.histogram(hour: 28).count == 1)
        #expect(window.histogram(hour: 29).count == 0)
        // Hour 24 takes hour 0's slot: hour 0's sample is gone even when read from an hour that still covers it.
        window.record(microseconds: 900, hour: 24)
        #expect(window.histogram(hour: 24).count == 2)
        #expect(window.histogram(hour: 24).percentile(0.5) == .microseconds(704))
        #expect(window.histogram(hour: 24).percentile(1) == .microseconds(960))
        // A late sample of an hour older than its slot's is outside the window: dropped.
        window.record(microseconds: 100, hour: 0)
        #expect(window.histogram(hour: 24).count == 2)
        #expect(window.histogram(hour: 4).count == 0, "an hour before the slots' hours sees none of them")
    }

    @Test("a client's statistics count hours on the monotonic clock from their origin")
    func statistics() {
        let origin = ContinuousClock.now
        let statistics = APNSClientStatistics(origin: origin)
        statistics.answered(after: .milliseconds(3), at: origin.advanced(by: .seconds(10)))
        statistics.answered(after: .milliseconds(40), at: origin.advanced(by: .seconds(3_600 * 23)))
        let latest = statistics.latency(at: origin.advanced(by: .seconds(3_600 * 23 + 1)))
        #expect(latest.count == 2 && latest.percentile(0.5) == .microseconds(3_072))
        #expect(statistics.latency(at: origin.advanced(by: .seconds(3_600 * 24))).count == 1)
        statistics.connectionOpened()
        statistics.connectionOpened()
        statistics.connectionClosed()
        #expect(statistics.openConnections == 1)
    }
}
