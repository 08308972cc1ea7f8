import HeraldCore
import HeraldStore

extension PostgresStore {
    /// Stores the attempts of the outcomes of a send that have any, in the session's transaction (most have none:
    /// nothing runs).
    func insertAttempts(_ outcomes: [DeliveryOutcome], of id: SendID, in session: Session) async throws {
        if let statement = StoreSQL.insertAttempts(of: id, outcomes, .postgres) { try await session.execute(statement) }
    }
}
