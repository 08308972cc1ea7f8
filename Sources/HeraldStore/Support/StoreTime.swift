package import Foundation

/// How the stores keep times: whole microseconds since 1970-01-01T00:00:00Z, in a 64-bit integer.
///
/// Both backends store integers rather than their native time types so that a time reads back exactly as it was
/// written on either one, and the §5.6 comparison ("registered after APNs's timestamp?") gives the same answer on
/// SQLite and PostgreSQL.
package enum StoreTime {
    /// The stored form of a date, rounded to the nearest microsecond.
    package static func microseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    }

    /// The date a stored value stands for.
    package static func date(_ microseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
    }

    /// A date as the store will give it back: rounded to the microsecond.
    package static func rounded(_ date: Date) -> Date { Self.date(microseconds(date)) }
}
