package import Foundation
import HeraldStore

extension PostgresStore {
    /// The database server's clock (`clock_timestamp()`), to which `herald doctor` compares this machine's: APNs
    /// refuses provider tokens issued in the future or more than an hour ago, and offline nothing else tells the time.
    /// - Throws: ``HeraldStore/StoreError`` `.unavailable` when the database does not answer.
    package func serverClock() async throws -> Date {
        let milliseconds = try await session("read the database's clock") { session in
            try await session.rows("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint")[0].integer(0)
        }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
