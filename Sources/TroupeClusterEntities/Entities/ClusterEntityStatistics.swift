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
    /// Items delivered here after ``ClusterEntityRegion/maximumHops`` forwards, although this
    /// node's placement names another owner.
    public var deliveredAfterHopLimit: Int
    /// Activations passivated here because placement moved their identity to another node.
    public var handedOff: Int
    /// Messages and requests whose call failed (they may or may not have been handled);
    /// requests among them fail their asks with ``ClusterEntityError/lostInTransit(node:reason:)``.
    public var lostInTransit: Int
    /// Messages that could not be decoded here, or were sent when no member held the kind.
    public var undeliverable: Int
    /// Asks waiting for an answer from another node now.
    public var asksWaiting: Int
}
