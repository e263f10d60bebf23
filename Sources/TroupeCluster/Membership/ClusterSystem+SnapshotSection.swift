import Troupe
import TroupeClusterMembership

extension ClusterSystem {
    /// What the node adds to its actor system's snapshots (and so to TroupeObserver's page and
    /// TroupeMetrics' gauges): the members it knows by SWIM status, and its current
    /// associations. Nil once the node has shut down, which drops the provider.
    var snapshotSection: SnapshotSection? {
        guard !isShutDown.load(ordering: .acquiring) else { return nil }
        var counts = (alive: 0, suspect: 0, unreachable: 0, down: 0)
        memberTable.withLock { table in
            for status in table.statuses.values {
                switch status {
                case .alive: counts.alive += 1
                case .suspect: counts.suspect += 1
                case .unreachable: counts.unreachable += 1
                case .down: counts.down += 1
                }
            }
        }
        let associated = associations.withLock { $0.current.count }
        return SnapshotSection(
            kind: "cluster", instance: "\(settings.clusterName) \(node)",
            values: [
                .init("members_alive", counts.alive), .init("members_suspect", counts.suspect),
                .init("members_unreachable", counts.unreachable), .init("members_down", counts.down),
                .init("associations", associated),
            ])
    }

    /// Registers ``snapshotSection`` with the actor system, once per node.
    func provideSnapshotSection() {
        actorSystem.provideSnapshotSection(key: SnapshotSectionKey(uid: node.uid)) { [weak self] in
            self?.snapshotSection
        }
    }
}

/// The key of a node's snapshot section: one per node, several nodes may share a system.
private struct SnapshotSectionKey: Hashable, Sendable {
    let uid: UInt64
}
