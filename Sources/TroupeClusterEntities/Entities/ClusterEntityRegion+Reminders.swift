import Troupe
import TroupePersistence
import TroupeVirtualActors

extension EntityReminders {
    /// Reminders for the entities of a kind spread over a cluster, in a store every node shares
    /// (PostgreSQL). Make one on every node of the kind: each node fires the reminders of the
    /// keys it owns in its view of the members, and a tick is claimed in the store before it is
    /// delivered, so while views disagree (a join, a leave, a crash) a tick is still delivered
    /// once. A key's reminders follow it when it moves: its new owner fires them from its next
    /// poll.
    public convenience init<Message: Codable & Sendable>(
        region: ClusterEntityRegion<Message>, store: any ReminderStore, pollInterval: Duration = .seconds(1),
        tick: @escaping @Sendable (ReminderTick) -> Message
    ) {
        let node = region.cluster.node
        self.init(
            system: region.cluster.actorSystem, kind: region.name, store: store, pollInterval: pollInterval,
            owns: { region.owner(of: $0) == node }, deliver: { region.entity($0.key).tell(tick($0)) })
    }
}
