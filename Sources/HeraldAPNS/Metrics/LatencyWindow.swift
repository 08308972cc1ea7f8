/// The latencies of the last 24 hours: one ``LatencyHistogram`` per hour in a ring of 24.
///
/// Memory is fixed (24 × 192 counters) whatever the traffic, and recording is O(1): the sample's hour picks its slot,
/// and a slot still holding an hour 24 or more hours old is emptied first. Hours are numbered by the caller (hours
/// since some origin), which keeps this a plain value that tests drive hour by hour.
public struct LatencyWindow: Sendable {
    /// How many hours the window holds.
    public static let hours = 24

    private var slots: [LatencyHistogram]
    /// The hour each slot holds; `nil` while it never held one.
    private var slotHours: [Int64?]

    /// An empty window.
    public init() {
        slots = Array(repeating: LatencyHistogram(), count: Self.hours)
        slotHours = Array(repeating: nil, count: Self.hours)
    }

    private static func slot(of hour: Int64) -> Int {
        Int((hour % Int64(hours) + Int64(hours)) % Int64(hours))
    }

    /// Counts one latency in its hour.
    ///
    /// A sample from an hour older than the one its slot holds now (a task that took a day to report) is dropped:
    /// it is outside the window anyway.
    public mutating func record(microseconds: UInt64, hour: Int64) {
        let slot = Self.slot(of: hour)
        if slotHours[slot] != hour {
            if let held = slotHours[slot], held > hour { return }
            slots[slot] = LatencyHistogram()
            slotHours[slot] = hour
        }
        slots[slot].record(microseconds: microseconds)
    }

    /// The samples of the 24 hours up to and including `hour`: the hour under way and the 23 before it.
    public func histogram(hour: Int64) -> LatencyHistogram {
        var total = LatencyHistogram()
        for (slot, held) in slotHours.enumerated() {
            guard let held, held <= hour, held > hour - Int64(Self.hours) else { continue }
            total.merge(slots[slot])
        }
        return total
    }
}
