import Troupe

/// A region's counters on this node, from ``EntityRegion/statistics``; also in the system's
/// `snapshot()` (section `entity_region`, instance the kind's name) and so in TroupeMetrics.
public struct EntityRegionStatistics: Sendable, Hashable {
    /// Activations alive now (including those passivating).
    public var active: Int
    /// Activations asked to passivate that have not stopped yet.
    public var passivating: Int
    /// Identities the directory knows now (active, or referenced and not yet retired).
    public var known: Int
    /// Activations made so far.
    public var activations: Int
    /// Activations passivated for idleness.
    public var idlePassivations: Int
    /// Activations passivated to keep the kind within its ``EntityKind/activeLimit``.
    public var limitPassivations: Int
    /// Activations passivated on request: ``EntityRegion/passivateAll()`` and
    /// ``EntityRegion/passivate(where:)`` (a cluster's handoff, for one).
    public var requestedPassivations: Int
    /// Activations that stopped on their own (a stop, a failure that stopped them, shutdown).
    public var unplannedStops: Int
    /// Messages and asks that waited in the directory while an activation stopped or started.
    public var buffered: Int
    /// Sends that went through the directory instead of straight to an activation.
    public var directoryLookups: Int

    var section: [SnapshotSection.Value] {
        [
            .init("active", active), .init("passivating", passivating), .init("known", known),
            .init("activations", activations),
            .init("idle_passivations", idlePassivations), .init("limit_passivations", limitPassivations),
            .init("requested_passivations", requestedPassivations),
            .init("unplanned_stops", unplannedStops), .init("buffered", buffered),
            .init("directory_lookups", directoryLookups),
        ]
    }
}
