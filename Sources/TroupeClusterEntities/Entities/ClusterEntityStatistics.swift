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
}
