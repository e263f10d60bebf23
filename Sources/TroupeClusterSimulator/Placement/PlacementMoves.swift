import TroupeClusterMembership

/// What a join costs in entities: identities placed over a cluster by TroupeClusterEntities'
/// rendezvous placement, before and after one node joins.
public enum PlacementMoves {
    /// The fraction of `entities` identities whose owner changes when one node joins a cluster
    /// of `members` (the ideal is 1/(members + 1): only those the newcomer wins), and whether
    /// every one that moved went to the newcomer. Each owner is looked up twice with the
    /// entities' own lookup (members × entities scores each time).
    public static func onJoin(members: Int, entities: Int, seed: UInt64) -> (moved: Double, allToNewcomer: Bool) {
        var generator = SplitMix(seed: seed)
        let before = (0..<max(1, members)).map { _ in generator.next() }
        let after = before + [generator.next()]
        let (mixedBefore, mixedAfter) = (before.map(RendezvousPlacement.mix), after.map(RendezvousPlacement.mix))
        var moved = 0
        var allToNewcomer = true
        for entity in 0..<entities {
            let hash = RendezvousPlacement.keyHash("entity-\(entity)")
            let old = RendezvousPlacement.owner(keyHash: hash, among: before, mixed: mixedBefore)
            let new = RendezvousPlacement.owner(keyHash: hash, among: after, mixed: mixedAfter)
            guard old != new else { continue }
            moved += 1
            if new != before.count { allToNewcomer = false }
        }
        return (entities > 0 ? Double(moved) / Double(entities) : 0, allToNewcomer)
    }
}
