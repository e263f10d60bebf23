// `troupe-bench cluster-entities`' race rows (issue 32): first calls to identities never used
// before, from all three nodes at once, while a fourth node joins and leaves; every activation's
// start and stop is logged in one place, so that two alive at once are seen.

import Logging
import Synchronization
import Troupe
import TroupeCluster
import TroupeClusterEntities
import TroupeTesting
import TroupeVirtualActors

extension ClusterEntitiesBench {
    /// `count` races in batches of 1,000 identities: each of the three nodes asks every identity
    /// of the batch, in the same seeded order, 8 asks in flight per node, so that the three first
    /// calls to an identity leave at about the same time. Every `churnEvery` batches a fourth
    /// node starts joining (or, once joined, leaving) while the next batch races, so that some
    /// first calls meet a change of owners and its handoff. Idle activations passivate after 2 s.
    func measureFirstCallRaces(
        count: Int, seed: UInt64, clusters: [ClusterSystem], logger: Logger
    ) async throws {
        let log = RaceLog(capacity: count)
        let kind = EntityKind<RaceEntity>("race", idleTimeout: .seconds(2)) { id in
            RaceEntity(index: Int(id.key.dropFirst()) ?? -1, log: log)
        }
        var regions: [ClusterEntityRegion<EntityTally.Message>] = []
        for cluster in clusters { regions.append(try await ClusterEntityRegion(cluster: cluster, kind: kind)) }
        for region in regions { try await region.awaitMembers(3, timeout: .seconds(60)) }

        let batch = 1_000
        let lanes = 8
        let churnEvery = max(1, count / batch / 20)
        var generator = SeededGenerator(seed: seed)
        var joiner: Joiner?
        var change: Task<Joiner?, any Error>?
        var joins = 0
        var leaves = 0
        let failures = HandledCount()  // the asks that failed
        let clock = ContinuousClock()
        let started = clock.now
        for (number, first) in stride(from: 0, to: count, by: batch).enumerated() {
            if number % churnEvery == churnEvery / 2 {
                // The previous change first finishes; the next starts while this batch races.
                if let pending = change {
                    joiner = try await pending.value
                    change = nil
                }
                if let leaving = joiner {
                    joiner = nil
                    leaves += 1
                    change = Task {
                        await leaving.region.leave()
                        await leaving.shutdown()
                        return nil
                    }
                } else {
                    joins += 1
                    change = Task { try await Joiner.start(seed: clusters[0].node, kind: kind, logger: logger) }
                }
            }
            var keys = (first..<min(first + batch, count)).map { "r\($0)" }
            keys.shuffle(using: &generator)
            let orderedKeys = keys
            try await withThrowingTaskGroup(of: Void.self) { group in
                for region in regions {
                    for lane in 0..<lanes {
                        group.addTask {
                            var index = lane
                            while index < orderedKeys.count {
                                do {
                                    _ = try await region.entity(orderedKeys[index]).ask(
                                        TallyPing(), timeout: .seconds(30))
                                } catch {
                                    failures.add()
                                }
                                index += lanes
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        if let pending = change { joiner = try await pending.value }
        let elapsed = clock.now - started
        let duration = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if let joiner {
            await joiner.region.leave()
            await joiner.shutdown()
        }
        let summary = log.summary
        print(
            "first calls raced from all 3 nodes (\(count) new identities, each asked by every node at once, seed \(seed); a 4th node joined \(joins) and left \(leaves) times meanwhile) | races/s | \(fixed(Double(count) / duration, 0)) |"
        )
        print(
            "the same races: activations (a move or a passivation restarts one) / identities | count | \(summary.activations) / \(count) |"
        )
        print(
            "the same races: asks that failed (typed errors, not retried) | count | \(failures.value) |"
        )
        print(
            "the same races: duplicate activations (an identity alive on two nodes at once) | count | \(summary.duplicates) | 0"
        )
        verify(
            summary.duplicates == 0,
            "cluster-entities: \(summary.duplicates) duplicate activations, the first of r\(summary.firstDuplicate ?? -1)"
        )
        verify(
            summary.activations >= count, "cluster-entities: \(summary.activations) activations of \(count) identities")
    }
}

/// The fourth node of the race rows: its own actor system, cluster system and region.
struct Joiner: Sendable {
    let system: ActorSystem
    let cluster: ClusterSystem
    let region: ClusterEntityRegion<EntityTally.Message>

    static func start(seed: ClusterNode, kind: EntityKind<RaceEntity>, logger: Logger) async throws -> Joiner {
        let system = ActorSystem(
            configuration: .init(name: "node3", workerCount: 1, pinWorkers: false, logger: logger))
        let cluster = try await ClusterSystem(
            settings: ClusterSettings(
                seeds: [(seed.host, seed.port)], secret: "troupe-bench cluster-entities secret",
                callTimeout: .seconds(60), logger: logger),
            actorSystem: system)
        return Joiner(
            system: system, cluster: cluster, region: try await ClusterEntityRegion(cluster: cluster, kind: kind))
    }

    func shutdown() async {
        await cluster.shutdown()
        await system.shutdown()
    }
}

/// Every race entity's starts and stops, on any node of this process: an identity started
/// while another activation of it is alive is a duplicate.
final class RaceLog: Sendable {
    struct Summary {
        var activations = 0
        var duplicates = 0
        var firstDuplicate: Int?
    }

    private struct State {
        var alive: [Int8]
        var summary = Summary()
    }

    private let state: Mutex<State>

    init(capacity: Int) { state = Mutex(State(alive: [Int8](repeating: 0, count: capacity))) }

    func started(_ index: Int) {
        state.withLock { state in
            guard state.alive.indices.contains(index) else { return }
            state.summary.activations += 1
            if state.alive[index] > 0 {
                state.summary.duplicates += 1
                if state.summary.firstDuplicate == nil { state.summary.firstDuplicate = index }
            }
            state.alive[index] += 1
        }
    }

    func stopped(_ index: Int) {
        state.withLock { state in
            guard state.alive.indices.contains(index) else { return }
            state.alive[index] -= 1
        }
    }

    var summary: Summary { state.withLock { $0.summary } }
}

/// A race's entity: answers pings, and logs its start and stop.
struct RaceEntity: ActorDefinition {
    typealias Message = EntityTally.Message
    let index: Int
    let log: RaceLog

    func started(context: ActorContext<Message>) { log.started(index) }
    func stopped(context: ActorContext<Message>) { log.stopped(index) }

    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .add: break
        case .ping(let reply), .count(let reply): reply.succeed(1)
        }
    }
}
