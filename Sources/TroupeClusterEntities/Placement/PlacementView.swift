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

    let members: [Member]
    /// The members' uids, in `members` order (what placement scores).
    let uids: [UInt64]

    init(members: [Member]) {
        self.members = members
        uids = members.map(\.node.uid)
    }

    /// The member that owns `key`; nil when no member holds the kind.
    func owner(of key: String) -> Member? {
        RendezvousPlacement.owner(of: key, among: uids).map { members[$0] }
    }

    func member(_ node: ClusterNode) -> Member? {
        members.first { $0.node == node }
    }
}
