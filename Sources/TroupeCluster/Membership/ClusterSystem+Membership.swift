import Synchronization
import Troupe
import TroupeClusterMembership

/// Every member's status as this node knows it, and the subscribers to changes.
struct MemberTable {
    var statuses: [ClusterNode: ClusterMemberStatus] = [:]
    var subscribers: [UInt64: AsyncStream<ClusterMembershipEvent>.Continuation] = [:]
    var nextSubscriber: UInt64 = 0
    var finished = false
    /// Members that announced they leave: their going down is logged as a departure, not a
    /// failure.
    var leaving: Set<ClusterNode> = []
    /// The smoothed round trip of each link this node's probes measured (SWIM's direct acks).
    var roundTrips: [ClusterNode: Duration] = [:]
    /// Members whose latest probe was answered only through a helper (SWIM's indirect acks):
    /// that probe's round trip and the helper. A member leaves this table when a probe of it
    /// is answered directly again, or when it is down.
    var indirectRoundTrips: [ClusterNode: IndirectRoundTrip] = [:]
    /// Down members, oldest first: like SWIM's tombstones, at most `maximumTombstones` are
    /// kept (every restart of a node is a new member: a long-lived cluster would otherwise
    /// keep every one it ever saw).
    var downOrder: [ClusterNode] = []

    /// Records `event`; a member newly down becomes a tombstone, and the oldest tombstones
    /// beyond `tombstoneLimit` are forgotten (as the state machine forgets its own).
    mutating func record(_ event: ClusterMembershipEvent, tombstoneLimit: Int) {
        let wasDown = statuses[event.member] == .down
        statuses[event.member] = event.status
        guard case .down = event.status, !wasDown else { return }
        // A down member is never probed again: its round trips go with it.
        roundTrips[event.member] = nil
        indirectRoundTrips[event.member] = nil
        downOrder.append(event.member)
        while downOrder.count > max(0, tombstoneLimit) {
            let forgotten = downOrder.removeFirst()
            statuses[forgotten] = nil
            leaving.remove(forgotten)
        }
    }
}

/// A probe answered only through another member: the round trip from the indirect requests
/// to the relayed ack, and the member that relayed it.
struct IndirectRoundTrip: Equatable {
    var roundTrip: Duration
    var via: ClusterNode
}

extension ClusterSystem {
    /// Every node this node knows of, with its status (this node included, alive; down nodes
    /// stay listed as down).
    public var membership: [ClusterNode: ClusterMemberStatus] {
        memberTable.withLock { $0.statuses }
    }

    /// The nodes currently alive (this one included).
    public var aliveMembers: [ClusterNode] {
        memberTable.withLock { table in
            table.statuses.filter { if case .alive = $0.value { true } else { false } }.map(\.key)
        }
    }

    /// Membership changes as they happen, starting with one event per node already known (its
    /// current status), so a late subscriber misses nothing. The sequence ends when the
    /// cluster shuts down. Each call makes an independent sequence; events are buffered
    /// without bound, so iterate it or drop it.
    public func membershipEvents() -> AsyncStream<ClusterMembershipEvent> {
        let (stream, continuation) = AsyncStream<ClusterMembershipEvent>.makeStream()
        let id = memberTable.withLock { table -> UInt64? in
            guard !table.finished else { return nil }
            for (member, status) in table.statuses.sorted(by: { $0.key.orderingKey < $1.key.orderingKey }) {
                continuation.yield(ClusterMembershipEvent(member: member, status: status))
            }
            table.nextSubscriber += 1
            table.subscribers[table.nextSubscriber] = continuation
            return table.nextSubscriber
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        // Not under the table's lock here: a cancelled consumer's task runs this while holding
        // its own status lock, and `publish` yields (which takes that task's status lock)
        // while holding the table's lock: the two orders deadlocked (seen under TSan). A
        // yield to the finished stream meanwhile is dropped.
        continuation.onTermination = { [weak self] _ in
            Task { _ = self?.memberTable.withLock { $0.subscribers.removeValue(forKey: id) } }
        }
        return stream
    }

    /// Whether `member` was marked down (final for that uid).
    func isDown(_ member: ClusterNode) -> Bool {
        memberTable.withLock { $0.statuses[member] == .down }
    }

    /// Records and publishes one change; a member going down fails its calls, fires its
    /// watches, drops its receptionist entries and closes its association.
    func publish(_ event: ClusterMembershipEvent) {
        let tombstoneLimit = settings.membership.maximumTombstones
        let left = memberTable.withLock { table in
            let left = table.leaving.contains(event.member)
            table.record(event, tombstoneLimit: tombstoneLimit)
            for continuation in table.subscribers.values { continuation.yield(event) }
            return left
        }
        metrics.membershipChanged(to: event.status)
        switch event.status {
        case .alive:
            logger.debug("member alive", metadata: ["member": "\(event.member)", "status": "\(event.status)"])
        case .suspect:
            logger.info("member suspect", metadata: ["member": "\(event.member)", "status": "\(event.status)"])
        case .unreachable:
            logger.warning("member unreachable", metadata: ["member": "\(event.member)"])
        case .down where left:
            logger.info("member left", metadata: ["member": "\(event.member)"])
            memberDown(event.member)
        case .down:
            logger.warning("member down", metadata: ["member": "\(event.member)"])
            memberDown(event.member)
        }
    }

    private func memberDown(_ member: ClusterNode) {
        failCalls(where: { $0 == member }, with: { .nodeDown($0) })
        nodeDownForWatches(member)
        removeReceptionistEntries(of: member)
        if let association = currentAssociation(to: member) {
            associations.withLock { table in
                if table.current[NodeAddress(member)] === association { table.current[NodeAddress(member)] = nil }
            }
            association.close()
        }
    }

    /// The cluster marked this node down (it learnt so from a peer that refused it, or from
    /// gossip): it cannot come back under this uid, so it reports itself down and shuts the
    /// cluster system down. Restart the process (a new uid) to rejoin.
    func removedByCluster(reason: String) {
        guard !shutDown else { return }
        logger.error(
            "this node was removed from the cluster; shutting the cluster system down (restart to rejoin)",
            metadata: ["reason": "\(reason)"])
        publish(ClusterMembershipEvent(member: node, status: .down))
        Task { await self.shutdown() }
    }

    func finishMembershipStreams() {
        let subscribers = memberTable.withLock { table in
            table.finished = true
            defer { table.subscribers = [:] }
            return Array(table.subscribers.values)
        }
        for continuation in subscribers { continuation.finish() }
    }
}
