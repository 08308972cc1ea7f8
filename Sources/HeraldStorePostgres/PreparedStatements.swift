import Foundation
import HeraldCore
import HeraldStore
import Logging
import PostgresNIO

/// Statements run so often that PostgreSQL parsing and planning them each time cost more than running them: once per
/// inline send (a profile of transactional sends put 43 % of PostgreSQL's time in parsing and planning), and the
/// statements of each recording of a fan-out's outcomes (planning was 60 % of PostgreSQL's time in a send to a million
/// devices). These are prepared once per connection (postgres-nio's named statements); every other statement is sent
/// unnamed.
///
/// A statement is prepared when its SQL text is one of these shapes'. Nothing else changes for the caller: the same
/// ``SQLStatement`` or ``SQLArrayStatement``, the same rows.
enum PreparedShapes {
    static let bySQL: [String: any PreparedShape.Type] = {
        let shapes: [any PreparedShape.Type] = [
            SelectDeviceByToken.self, FinishedSendToOneDevice.self, AuditedFinishedSendToOneDevice.self,
            LockSend.self, LockShard.self, RecordingRead.self, RecordOutcomes.self, RecordShardOutcomes.self,
            TokensCorrected.self,
        ]
        return Dictionary(uniqueKeysWithValues: shapes.map { shape in (shape.text.sql, shape) })
    }()
}

/// A statement of fixed SQL text, with the types of its parameters.
protocol PreparedShape: Sendable {
    /// The name it is prepared under on each connection: distinct among shapes, and at most 63 bytes, the length
    /// at which PostgreSQL cuts names (two longer names with a common start would be one statement to it).
    static var name: String { get }
    /// Its SQL and parameter types, made once.
    static var text: PreparedText { get }
}

/// The SQL of a prepared shape and its parameters' types, from sample statements of that shape: each parameter takes
/// the type of the first sample that binds it to a value rather than `NULL`.
struct PreparedText: Sendable {
    let sql: String
    let types: [PostgresDataType]

    init(samples: [SQLStatement]) {
        let sql = samples[0].sql
        precondition(samples.allSatisfy { $0.sql == sql }, "the samples of a prepared statement differ in SQL")
        self.sql = sql
        types = samples[0].binds.indices.map { index in
            for sample in samples {
                switch sample.binds[index] {
                case .text: return .text
                case .integer: return .int8
                case .bytes: return .bytea
                case .null: continue
                }
            }
            preconditionFailure("no sample of a prepared statement binds parameter \(index + 1) to a value")
        }
    }

    /// From sample statements of array parameters: each array its column's type, then each scalar the type of the
    /// first sample that binds it to a value.
    init(arraySamples samples: [SQLArrayStatement]) {
        let sql = samples[0].sql
        precondition(samples.allSatisfy { $0.sql == sql }, "the samples of a prepared statement differ in SQL")
        let scalars = PreparedText(
            samples: samples.map { SQLStatement(.postgres, sql, $0.scalars) })
        self.sql = sql
        types =
            samples[0].columns.map { column in
                switch column {
                case .text: .textArray
                case .integer: .int8Array
                case .bytes: .byteaArray
                }
            } + scalars.types
    }
}

extension PreparedShape {
    static func rows(_ bindings: PostgresBindings, on connection: PostgresConnection, logger: Logger)
        async throws -> [PostgresRandomAccessRow]
    {
        var rows: [PostgresRandomAccessRow] = []
        for try await row in try await connection.execute(Prepared<Self>(bindings: bindings), logger: logger) {
            rows.append(row)
        }
        return rows
    }
}

/// postgres-nio's prepared statement for a shape: named after the shape, so prepared once per connection.
private struct Prepared<Shape: PreparedShape>: PostgresPreparedStatement {
    static var name: String { Shape.name }
    static var sql: String { Shape.text.sql }
    static var bindingDataTypes: [PostgresDataType] { Shape.text.types }

    let bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings { bindings }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { PostgresRandomAccessRow(row) }
}

/// One device by its token: the target of an inline send to one device (``DeviceQuery/singleToken``).
private enum SelectDeviceByToken: PreparedShape {
    static let name = "herald_select_device_by_token"
    static let text = PreparedText(samples: [StoreSQL.selectDevice(sampleToken, .postgres)])
}

/// An inline send to one device, recorded with its outcome.
private enum FinishedSendToOneDevice: PreparedShape {
    static let name = "herald_finished_send_to_one_device"
    static let text = finishedSendToOneDevice(audit: nil)
}

/// An inline send to one device made through the API, recorded with its outcome and its request's audit entry.
private enum AuditedFinishedSendToOneDevice: PreparedShape {
    static let name = "herald_audited_finished_send_to_one_device"
    static let text = finishedSendToOneDevice(
        audit: AuditEntry(
            at: Date(timeIntervalSince1970: 0), actor: AuditActor(kind: .apiKey, keyID: UUID(), name: "sample"),
            address: "sample", action: .sendCreated, app: "sample", subject: "sample", detail: "sample"))
}

/// The lock a recording of a send's outcomes takes first (``StoreSQL/lockForRecording(_:shard:)``).
private enum LockSend: PreparedShape {
    static let name = "herald_lock_send_for_recording"
    static let text = PreparedText(samples: [StoreSQL.lockForRecording(SendID(), shard: nil)])
}

/// The lock a recording of a shard's outcomes takes first (``StoreSQL/lockForRecording(_:shard:)``).
private enum LockShard: PreparedShape {
    static let name = "herald_lock_shard_for_recording"
    static let text = PreparedText(samples: [StoreSQL.lockForRecording(SendID(), shard: 0)])
}

/// A recording's read of the last sequence number and of what the send recorded in its range of tokens
/// (``OutcomeRecording/priorRead(_:)``): one text for every send, shard and mix of environments.
private enum RecordingRead: PreparedShape {
    static let name = "herald_recording_read"
    static let text = PreparedText(samples: [sampleRecording(shard: 0).priorRead(.postgres)!])
}

/// A recording of a send's outcomes (``StoreSQL/recordOutcomes(_:checkpoint:at:)``).
private enum RecordOutcomes: PreparedShape {
    static let name = "herald_record_outcomes"
    static let text = PreparedText(
        arraySamples: [StoreSQL.recordOutcomes(sampleRecording(shard: nil), checkpoint: sampleCursor, at: sampleTime)])
}

/// A recording of a shard's outcomes (``StoreSQL/recordShardOutcomes(_:shard:checkpoint:at:)``).
private enum RecordShardOutcomes: PreparedShape {
    static let name = "herald_record_shard_outcomes"
    static let text = PreparedText(
        arraySamples: [
            StoreSQL.recordShardOutcomes(sampleRecording(shard: 0), shard: 0, checkpoint: sampleCursor, at: sampleTime)
        ])
}

/// Which of a page's devices a send moved to their other environment (``StoreSQL/tokensCorrected(by:among:)``).
private enum TokensCorrected: PreparedShape {
    static let name = "herald_tokens_corrected"
    static let text = PreparedText(arraySamples: [StoreSQL.tokensCorrected(by: SendID(), among: [sampleToken])])
}

/// A recording of outcomes in both environments: its statements bind every parameter.
private func sampleRecording(shard: Int?) -> OutcomeRecording {
    OutcomeRecording(
        zip(APNSEnvironment.all, [sampleToken, otherSampleToken]).map {
            DeliveryOutcome(token: $1, environment: $0, result: .failed(message: "sample"), at: sampleTime)
        }, of: SendID(), shard: shard)
}

private var sampleCursor: DeviceCursor { DeviceCursor(environment: .production, token: sampleToken) }

private var sampleTime: Date { Date(timeIntervalSince1970: 0) }

/// The samples of an inline send to one device, each kind of outcome.
private func finishedSendToOneDevice(audit: AuditEntry?) -> PreparedText {
    do {
        let now = Date(timeIntervalSince1970: 0)
        let send = NewSend(
            target: "sample", summary: "sample", job: "sample", status: .completed, targetCount: 1, message: "sample",
            topic: "sample", audit: audit)
        let results: [DeliveryOutcome.Result] = [
            .accepted(apnsID: APNSID()), .rejected(status: 410, reason: .unregistered, timestamp: now),
            .failed(message: "sample"),
        ]
        return PreparedText(
            samples: results.map {
                StoreSQL.insertFinishedSend(
                    send,
                    outcomes: [
                        DeliveryOutcome(
                            token: sampleToken, environment: .production, result: $0, at: now, action: .kept,
                            apnsUniqueID: "sample")
                    ], at: now)
            })
    }
}

/// A token for the samples: only the SQL and the kinds of values they bind are used.
private var sampleToken: DeviceToken {
    do { return try DeviceToken(data: [UInt8](repeating: 0xab, count: 32)) } catch {
        preconditionFailure("32 bytes are a device token")
    }
}

/// A second token, for samples with two devices.
private var otherSampleToken: DeviceToken {
    do { return try DeviceToken(data: [UInt8](repeating: 0xcd, count: 32)) } catch {
        preconditionFailure("32 bytes are a device token")
    }
}
