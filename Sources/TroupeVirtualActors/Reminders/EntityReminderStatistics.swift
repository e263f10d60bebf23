import Troupe

/// What one node's ``EntityReminders`` did since it started.
public struct EntityReminderStatistics: Sendable, Hashable {
    /// Ticks this node claimed in the store and handed to their entity.
    public var delivered: Int
    /// Ticks this node found due but another node (or a replaced or removed reminder) had
    /// claimed first: what keeps a tick from being delivered twice.
    public var claimedElsewhere: Int
    /// Claimed ticks the entity refused (a dead letter: the region or the system was stopped).
    public var undelivered: Int
    /// Reads and claims the store failed (logged; retried at the next poll).
    public var storeFailures: Int
    /// Reminders due within the next poll window that this node holds in memory.
    public var pending: Int
    /// Reads of due reminders from the store: one per poll, and one per further page of a
    /// backlog (at most 1,000 reminders a page).
    public var reads: Int

    public init(delivered: Int, claimedElsewhere: Int, undelivered: Int, storeFailures: Int, pending: Int, reads: Int) {
        self.delivered = delivered
        self.claimedElsewhere = claimedElsewhere
        self.undelivered = undelivered
        self.storeFailures = storeFailures
        self.pending = pending
        self.reads = reads
    }

    var section: [SnapshotSection.Value] {
        [
            .init("delivered_total", delivered), .init("claimed_elsewhere_total", claimedElsewhere),
            .init("undelivered_total", undelivered), .init("store_failures_total", storeFailures),
            .init("pending", pending), .init("reads_total", reads),
        ]
    }
}
