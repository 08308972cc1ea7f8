import HeraldSending

extension LogKey {
    /// What a retention run deleted: a dictionary of counts by kind.
    static let retentionDeleted = "herald.retention_deleted"
    /// The bytes a retention run gave back to the file system.
    static let reclaimedBytes = "herald.reclaimed_bytes"
}
