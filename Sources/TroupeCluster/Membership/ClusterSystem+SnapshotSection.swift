import Troupe
import TroupeClusterMembership

extension ClusterSystem {
    /// What the node adds to its actor system's snapshots (and so to TroupeObserver's page and
    /// TroupeMetrics' gauges): the members it knows by SWIM status, and its current
    /// associations; and a table of the members with each link's smoothed round trip (SWIM's
    /// direct acks), the round trip through a helper for a member whose latest probe only a
    /// helper answered (and the helper), and the calls sent and received over its current
    /// association. Nil once the node has shut down, which drops the provider.
    var snapshotSection: SnapshotSection? {
        guard !isShutDown.load(ordering: .acquiring) else { return nil }
        var counts = (alive: 0, suspect: 0, unreachable: 0, down: 0)
        let (statuses, roundTrips, indirect) = memberTable.withLock {
            ($0.statuses, $0.roundTrips, $0.indirectRoundTrips)
        }
        for status in statuses.values {
            switch status {
            case .alive: counts.alive += 1
            case .suspect: counts.suspect += 1
            case .unreachable: counts.unreachable += 1
            case .down: counts.down += 1
            }
        }
        let current = associations.withLock { $0.current }
        var rows: [[String]] = []
        for (member, status) in statuses where member != node {
            let association = current[NodeAddress(member)].flatMap { $0.peer == member ? $0 : nil }
            let roundTrip: String
            var throughHelper: IndirectRoundTrip?
            if case .down = status {
                roundTrip = ""
            } else {
                roundTrip = roundTrips[member].map { Self.milliseconds($0) } ?? ""
                throughHelper = indirect[member]
            }
            rows.append([
                "\(member.host):\(member.port)", "\(member.uid)", Self.name(of: status), roundTrip,
                throughHelper.map { Self.milliseconds($0.roundTrip) } ?? "",
                throughHelper.map { "\($0.via.host):\($0.via.port)" } ?? "",
                association.map { "\($0.callsSent.load(ordering: .relaxed))" } ?? "",
                association.map { "\($0.callsReceived.load(ordering: .relaxed))" } ?? "",
            ])
        }
        rows.sort { $0[0] != $1[0] ? $0[0] < $1[0] : $0[1] < $1[1] }
        return SnapshotSection(
            kind: "cluster", instance: "\(settings.clusterName) \(node)",
            values: [
                .init("members_alive", counts.alive), .init("members_suspect", counts.suspect),
                .init("members_unreachable", counts.unreachable), .init("members_down", counts.down),
                .init("associations", current.count),
            ],
            tables: [
                .init(
                    "members",
                    columns: [
                        "member", "uid", "status", "round_trip_ms", "indirect_round_trip_ms", "indirect_via",
                        "calls_out_total", "calls_in_total",
                    ],
                    rows: rows)
            ])
    }

    /// A round trip in milliseconds with two decimals (`0.42`).
    private static func milliseconds(_ duration: Duration) -> String {
        let hundredths = (duration.components.seconds * 100_000 + duration.components.attoseconds / 10_000_000_000_000)
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100)"
    }

    private static func name(of status: ClusterMemberStatus) -> String {
        switch status {
        case .alive: "alive"
        case .suspect: "suspect"
        case .unreachable: "unreachable"
        case .down: "down"
        }
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
