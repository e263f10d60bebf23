import TroupeCluster
import TroupeClusterMembership

/// The members holding a kind, as this node last heard from the receptionist, and the line
/// to each other one. Immutable: a change makes a new view.
final class PlacementView: Sendable {
    struct Member: Sendable {
        let node: ClusterNode
        /// nil for this node.
        let outbox: Outbox?
    }

    /// The members that own identities.
    let members: [Member]
    /// Members still checked in that announced they are leaving: they own nothing, but their
    /// activations must stop before the identities start elsewhere (they confirm the view).
    let leaving: [Member]
    /// The members' uids, in `members` order (what placement scores).
    let uids: [UInt64]
    /// Each of `uids` mixed (``RendezvousPlacement/mix(_:)``), for lookups.
    let mixedUIDs: [UInt64]
    /// The owners' uids as a set, folded: equal on every node that sees the same owners.
    let fingerprint: UInt64
    /// Counts the views this node's region made, this one included (0 before the first): a
    /// line refuses an item routed by a view older than the last one it carried a marker of.
    let number: UInt64

    init(members: [Member], leaving: [Member] = [], number: UInt64 = 0) {
        self.members = members
        self.leaving = leaving
        self.number = number
        uids = members.map(\.node.uid)
        mixedUIDs = uids.map(RendezvousPlacement.mix)
        fingerprint = uids.sorted().reduce(0x5452_4f55_5045_0001) { RendezvousPlacement.mix($0 ^ $1) }
    }

    /// The member that owns `key`; nil when no member holds the kind.
    func owner(of key: String) -> Member? {
        RendezvousPlacement.owner(keyHash: RendezvousPlacement.keyHash(key), among: uids, mixed: mixedUIDs).map {
            members[$0]
        }
    }

    /// A member or a leaving member.
    func member(_ node: ClusterNode) -> Member? {
        members.first { $0.node == node } ?? leaving.first { $0.node == node }
    }

    /// The other nodes that confirm a new view: the other members and the leaving ones.
    var confirmers: [Member] { (members + leaving).filter { $0.outbox != nil } }
}
