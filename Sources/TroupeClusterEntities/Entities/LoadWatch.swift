import Troupe
internal import TroupeLocks
import TroupeCluster
import TroupeClusterMembership

/// The other members' loads, as a snapshot section shows them: asked of their hosts once a
/// second, but only while snapshots of this node are being read (a page or an exporter is
/// watching). Nobody reading: no call is made, and the table shows what was last known.
final class LoadWatch: Sendable {
    /// How long after the last snapshot read the watch keeps asking.
    static let watchedFor: Duration = .seconds(3)
    /// How often it asks while watched.
    static let interval: Duration = .seconds(1)

    struct State {
        var loads: [UInt64: (load: NodeEntityLoad, at: ContinuousClock.Instant)] = [:]
        var lastRead: ContinuousClock.Instant?
        var asking = false
    }

    let state = Locked(State())

    /// Whether the watch is asking now (tests).
    var isAsking: Bool { state.withLock { $0.asking } }

    /// A snapshot is being read: returns the loads last known (fresh or not), and starts asking
    /// if nobody is. `ask` gets the loads of every member; `isGone` ends the watch with its region.
    func read(
        ask: @escaping @Sendable () async -> [NodeEntityLoad], isGone: @escaping @Sendable () -> Bool
    ) -> [(load: NodeEntityLoad, at: ContinuousClock.Instant)] {
        let now = ContinuousClock.now
        let (loads, start) = state.withLock { state in
            state.lastRead = now
            defer { state.asking = true }
            return (state.loads.values.sorted { $0.load.node.uid < $1.load.node.uid }, !state.asking)
        }
        if start {
            Task { [self] in
                while !isGone() {
                    let answered = await ask()
                    let at = ContinuousClock.now
                    let watched = state.withLock { state in
                        // Only the members that answered this round: one that left drops out.
                        state.loads = Dictionary(answered.map { ($0.node.uid, ($0, at)) }) { first, _ in first }
                        let watched = state.lastRead.map { at - $0 < Self.watchedFor } ?? false
                        if !watched { state.asking = false }
                        return watched
                    }
                    guard watched else { return }
                    try? await Task.sleep(for: Self.interval)
                }
                state.withLock { $0.asking = false }
            }
        }
        return loads
    }
}

extension LoadWatch {
    /// The section's `nodes` table: each member's load, its durable store's lag (empty cells
    /// for a node without journals), and how old the row is.
    static func table(
        _ known: [(load: NodeEntityLoad, at: ContinuousClock.Instant)], now: ContinuousClock.Instant
    ) -> SnapshotSection.Table {
        SnapshotSection.Table(
            "nodes", columns: ["node", "active", "activations_total", "journal_queued", "write_p99_us", "age_ms"],
            rows: known.map { entry in
                let lag = entry.load.journalLag
                return [
                    "\(entry.load.node)", "\(entry.load.active)", "\(entry.load.activations)",
                    lag.map { "\($0.queuedOperations)" } ?? "",
                    lag?.writeLatencyP99.map { "\(Int($0 / .microseconds(1)))" } ?? "",
                    "\(Int((now - entry.at) / .milliseconds(1)))",
                ]
            })
    }
}

extension EntityHost {
    /// Every member's load: this node's at once, the others' asked of their hosts at the same
    /// time (each call bounded by the cluster's `callTimeout`); a member that fails to answer is
    /// left out. One load per node: a node whose region was made again can be listed with both
    /// hosts for a moment (the old one's region is gone and does not answer).
    static func loads(of hosts: [EntityHost], local: NodeEntityLoad) async -> [NodeEntityLoad] {
        await withTaskGroup(of: NodeEntityLoad?.self) { group in
            for host in hosts where host.id.node.uid != local.node.uid {
                group.addTask { try? await host.load() }
            }
            var loads = [local.node.uid: local]
            for await load in group {
                if let load, loads[load.node.uid] == nil { loads[load.node.uid] = load }
            }
            return loads.values.sorted { $0.node.uid < $1.node.uid }
        }
    }
}
