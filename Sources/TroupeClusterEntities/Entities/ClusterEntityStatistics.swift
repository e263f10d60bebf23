import Troupe
import TroupeVirtualActors

/// A cluster region's counters on this node, from ``ClusterEntityRegion/statistics``.
public struct ClusterEntityStatistics: Sendable, Hashable {
    /// The local directory's counters: the activations this node holds.
    public var local: EntityRegionStatistics
    /// Members holding the kind, this node included, as this node sees them.
    public var members: Int
    /// Messages and requests this node sent to another node for an entity there.
    public var sentToOtherNodes: Int
    /// Messages and requests other nodes sent here.
    public var receivedFromOtherNodes: Int
    /// Items that reached this node for an entity it does not own (the sender's members were
    /// not this node's: a join or leave in progress) and were sent on to the owner.
    public var forwarded: Int
    /// Items that went round ``ClusterEntityRegion/maximumHops`` nodes without finding their
    /// owner and were sent again after a pause (the nodes disagreed about the members).
    public var retriedAfterHopLimit: Int
    /// Activations passivated here because placement moved their identity to another node.
    public var handedOff: Int
    /// Messages and requests whose call failed (they may or may not have been handled);
    /// requests among them fail their asks with ``ClusterEntityError/lostInTransit(node:reason:)``.
    public var lostInTransit: Int
    /// Messages that could not be decoded here, or were sent when no member held the kind.
    public var undeliverable: Int
    /// Asks waiting for an answer from another node now.
    public var asksWaiting: Int
    /// Items held so far because they would have started an activation here before the other
    /// members confirmed a change of members (see the module's documentation, "Handoff").
    public var heldForHandoff: Int
    /// Items held now.
    public var heldNow: Int
    /// Changes of members that this node stopped waiting for after
    /// ``ClusterEntityRegion/handoffTimeout``, some members not having confirmed them.
    public var handoffTimeouts: Int
    /// Items that another node sent after telling this one it routes by members this node had
    /// not heard of yet: they waited until it had (see the module's documentation, "Handoff").
    public var parkedForNewerMembers: Int
    /// Changes of members whose handoff ended here: every other member confirmed, or
    /// ``ClusterEntityRegion/handoffTimeout`` passed (changes with no other member to wait for,
    /// and changes a newer one overtook, are not counted).
    public var handoffs: Int
    /// How long those handoffs took: from the change of members until activations started
    /// here again (what was held had gone on).
    public var handoffDurations: LatencyHistogram
    /// Whether the current view is settled (``ClusterEntityRegion/isSettled``).
    public var isSettled: Bool

    /// Everything but `local`, as the region counts it.
    struct Totals {
        var members, sentToOtherNodes, receivedFromOtherNodes, forwarded, retriedAfterHopLimit: Int
        var handedOff, lostInTransit, undeliverable, asksWaiting, heldForHandoff, heldNow: Int
        var handoffTimeouts, parkedForNewerMembers, handoffs: Int
        var handoffDurations: LatencyHistogram
        var isSettled: Bool

        /// The region's section of `ActorSystem.snapshot()` (kind `cluster_entity_region`),
        /// and so TroupeMetrics' gauges (`troupe_cluster_entity_region_members`, …,
        /// `troupe_cluster_entity_region_handoff_seconds`). The local directory has its own
        /// (kind `entity_region`).
        func section(instance: String) -> SnapshotSection {
            SnapshotSection(
                kind: "cluster_entity_region", instance: instance,
                values: [
                    .init("members", members), .init("settled", isSettled ? 1 : 0),
                    .init("sent_to_other_nodes", sentToOtherNodes),
                    .init("received_from_other_nodes", receivedFromOtherNodes),
                    .init("forwarded", forwarded), .init("retried_after_hop_limit", retriedAfterHopLimit),
                    .init("handed_off", handedOff), .init("lost_in_transit", lostInTransit),
                    .init("undeliverable", undeliverable), .init("asks_waiting", asksWaiting),
                    .init("held_for_handoff", heldForHandoff), .init("held_now", heldNow),
                    .init("handoffs", handoffs), .init("handoff_timeouts", handoffTimeouts),
                    .init("parked_for_newer_members", parkedForNewerMembers),
                ],
                histograms: [.init("handoff", handoffDurations)])
        }
    }

    init(local: EntityRegionStatistics, _ totals: Totals) {
        self.local = local
        (members, sentToOtherNodes, receivedFromOtherNodes) =
            (totals.members, totals.sentToOtherNodes, totals.receivedFromOtherNodes)
        (forwarded, retriedAfterHopLimit, handedOff) = (totals.forwarded, totals.retriedAfterHopLimit, totals.handedOff)
        (lostInTransit, undeliverable, asksWaiting) = (totals.lostInTransit, totals.undeliverable, totals.asksWaiting)
        (heldForHandoff, heldNow, handoffTimeouts) = (totals.heldForHandoff, totals.heldNow, totals.handoffTimeouts)
        (parkedForNewerMembers, handoffs) = (totals.parkedForNewerMembers, totals.handoffs)
        (handoffDurations, isSettled) = (totals.handoffDurations, totals.isSettled)
    }
}
