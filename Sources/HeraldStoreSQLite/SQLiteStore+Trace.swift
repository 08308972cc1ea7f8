import GRDB
import HeraldCore
import HeraldStore

extension Database {
    /// Stores the attempts of the outcomes that have any (most have none: nothing runs).
    func insertAttempts(_ outcomes: some Sequence<DeliveryOutcome>, of id: SendID) throws {
        if let statement = StoreSQL.insertAttempts(of: id, outcomes, .sqlite) { try execute(statement) }
    }
}
