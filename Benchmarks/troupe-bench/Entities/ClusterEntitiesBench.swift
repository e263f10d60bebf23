// `troupe-bench cluster-entities`: TroupeClusterEntities on three nodes in this process
// (issue 32): placement, the first message to a new entity here and on another node, and
// tells and asks per second to 100,000 entities spread over the three.

import ArgumentParser
import Foundation
import Histogram
import Logging
import Synchronization
import Troupe
import TroupeCluster
import TroupeClusterEntities
import TroupeVirtualActors

struct ClusterEntitiesBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster-entities",
        abstract: "TroupeClusterEntities on three nodes in this process: placement, first messages, calls per second.",
        discussion: """
            Three TroupeCluster nodes in this process, over loopback TCP, each with its own actor \
            system of one worker (as in `troupe-bench cluster`'s call rows). Each row says what it \
            measures. "first message" is an ask of an identity never used before, from a task on the \
            first node's task executor: here, the local directory's activation and the ask; on \
            another node, the request's encoding, one batch each way over the association and the \
            activation there. Placement is computed (rendezvous hashing over the members), so there \
            is no directory lookup to miss: the remote row is what the issue calls "remote with a \
            directory miss". The throughput rows send from all three nodes at once and check every \
            entity's count at the end. The race rows ask identities never used before from all three \
            nodes at once while a fourth node joins and leaves, and count activations alive on two \
            nodes at once (duplicates).
            """)

    @ParentCommand var parent: TroupeBench
    var quick: Bool { parent.quick }

    @Option(help: "Entities for the throughput rows (default 100,000; 10,000 with --quick).")
    var entities: Int?

    @Option(
        help:
            "First-call races: new identities each asked by all three nodes at once (default 1,000,000; 20,000 with --quick)."
    )
    var races: Int?

    @Option(help: "The races' seed (their order).")
    var raceSeed: UInt64 = 1

    func validate() throws {
        if let races, races < 1 { throw ValidationError("--races needs a positive count, got \(races)") }
    }

    func run() throws {
        let command = self
        try blocking(on: nil) { try await command.measure() }
    }

    func measure() async throws {
        let entityCount = entities ?? (quick ? 10_000 : 100_000)
        let firsts = quick ? 2_000 : 20_000
        var logger = Logger(label: "troupe-bench.cluster-entities")
        logger.logLevel = .error
        var systems: [ActorSystem] = []
        var clusters: [ClusterSystem] = []
        for index in 0..<3 {
            let system = ActorSystem(
                configuration: .init(name: "node\(index)", workerCount: 1, pinWorkers: false, logger: logger))
            let seeds = clusters.first.map { [($0.node.host, $0.node.port)] } ?? []
            systems.append(system)
            clusters.append(
                try await ClusterSystem(
                    settings: ClusterSettings(
                        seeds: seeds, secret: "troupe-bench cluster-entities secret", callTimeout: .seconds(60),
                        logger: logger),
                    actorSystem: system))
        }
        var regions: [ClusterEntityRegion<EntityTally.Message>] = []
        for cluster in clusters {
            regions.append(
                try await ClusterEntityRegion(
                    cluster: cluster, kind: EntityKind("tally", idleTimeout: nil) { _ in EntityTally() }))
        }
        for region in regions { try await region.awaitMembers(3, timeout: .seconds(60)) }
        print("TroupeClusterEntities: 3 nodes in this process over loopback TCP, one worker each")
        print("row | measure | value | target")
        print("---|---|---|---")

        // Placement: the owner of a key, as every send computes it.
        let here = regions[0]
        let keys = (0..<1_000).map { "p\($0)" }
        let clock = ContinuousClock()
        var checksum = 0
        let lookups = quick ? 1_000_000 : 10_000_000
        let started = clock.now
        for index in 0..<lookups { checksum &+= here.owner(of: keys[index % keys.count])!.port }
        let lookup = seconds(clock.now - started) * 1e9 / Double(lookups)
        verify(checksum != 0, "cluster-entities: no owner found")
        print("owner of a key (rendezvous over 3 members, view behind a lock) | ns | \(fixed(lookup, 1)) | ≤ 50 ns")

        // First message to a new entity: alternately one this node owns and one another owns,
        // from a task on the first node's task executor (where a local ask of an idle actor
        // runs its turn in place, as in `troupe-bench entities`).
        let me = clusters[0].node
        let (local, remote) = try await Task(executorPreference: systems[0].taskExecutor) {
            var local = makeLatencyHistogram()
            var remote = makeLatencyHistogram()
            var index = 0
            while local.totalCount < UInt64(firsts) || remote.totalCount < UInt64(firsts) {
                let key = "first-\(index)"
                index += 1
                let isLocal = here.owner(of: key) == me
                if isLocal ? local.totalCount >= UInt64(firsts) : remote.totalCount >= UInt64(firsts) { continue }
                let begin = clock.now
                let answer = try await here.entity(key).ask(TallyPing())
                let elapsed = UInt64(seconds(clock.now - begin) * 1e9)
                verify(answer == 1, "cluster-entities: a ping answered \(answer)")
                if isLocal { local.record(elapsed) } else { remote.record(elapsed) }
            }
            return (local, remote)
        }.value
        let localSummary = LatencySummary(local)
        let remoteSummary = LatencySummary(remote)
        print(
            "first message to a new entity on this node (activation + ask) | p50 / p99 | \(micros(localSummary.p50)) / \(micros(localSummary.p99)) | p50 ≤ 5 µs"
        )
        print(
            "first message to a new entity on another node (request there and back + activation) | p50 / p99 | \(micros(remoteSummary.p50)) / \(micros(remoteSummary.p99)) | p50 ≤ 150 µs, p99 ≤ 500 µs"
        )

        // Tells from all three nodes to every entity, then each node's tallies checked.
        let targets = (0..<entityCount).map { "e\($0)" }
        let rounds = quick ? 2 : 5
        let tellStart = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for region in regions {
                group.addTask {
                    for _ in 0..<rounds {
                        for key in targets { region.entity(key).tell(.add) }
                    }
                }
            }
            try await group.waitForAll()
        }
        // Every count must reach 3 × rounds; asking each entity also waits for the tells.
        try await confirm(targets, in: regions, expected: 3 * rounds)
        let tellRate = Double(3 * rounds * entityCount) / seconds(clock.now - tellStart)
        print(
            "tells to \(entityCount) entities over 3 nodes, from all 3, until counted | messages/s | \(fixed(tellRate, 0)) | ≥ 300,000 calls/s"
        )

        // Asks from all three nodes, 64 in flight per node.
        let askStart = clock.now
        let asksPerNode = quick ? 20_000 : 100_000
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (node, region) in regions.enumerated() {
                for lane in 0..<64 {
                    group.addTask {
                        var next = lane
                        while next < asksPerNode {
                            let answer = try await region.entity(targets[(next &* 7 &+ node) % entityCount]).ask(
                                TallyPing())
                            verify(answer == 1, "cluster-entities: a ping answered \(answer)")
                            next += 64
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let askRate = Double(3 * asksPerNode) / seconds(clock.now - askStart)
        print(
            "asks to \(entityCount) entities over 3 nodes, 64 in flight per node | asks/s | \(fixed(askRate, 0)) | ≥ 300,000 calls/s"
        )
        let statistics = regions.map(\.statistics)
        let active = statistics.map(\.local.active)
        verify(
            statistics.allSatisfy { $0.lostInTransit == 0 && $0.undeliverable == 0 },
            "cluster-entities: items lost or undeliverable: \(statistics)")
        print("activations per node at the end | count | \(active.map(String.init).joined(separator: " / ")) |")

        try await measureRebalance(entityCount: entityCount, clusters: clusters, logger: logger)
        try await measureFirstCallRaces(
            count: races ?? (quick ? 20_000 : 1_000_000), seed: raceSeed, clusters: clusters, logger: logger)
        for cluster in clusters { await cluster.shutdown() }
        for system in systems { await system.shutdown() }
    }

    /// A fourth node joins while the three send to `entityCount` active entities of a kind
    /// whose handled messages are counted: the time from making its region until every node's
    /// handoff has settled (the moved activations stopped on their old homes, their held
    /// messages delivered on the new one), and the messages lost (sent minus handled).
    private func measureRebalance(entityCount: Int, clusters: [ClusterSystem], logger: Logger) async throws {
        let handled = HandledCount()
        let kind = EntityKind<CountedEntity>("moving", idleTimeout: nil) { _ in CountedEntity(handled: handled) }
        var regions: [ClusterEntityRegion<CountedEntity.Message>] = []
        for cluster in clusters { regions.append(try await ClusterEntityRegion(cluster: cluster, kind: kind)) }
        for region in regions { try await region.awaitMembers(3, timeout: .seconds(60)) }
        let keys = (0..<entityCount).map { "m\($0)" }
        for key in keys { regions[0].entity(key).tell(.add) }
        try await waitFor(handled, toReach: entityCount, what: "activating the entities")

        let system = ActorSystem(
            configuration: .init(name: "node3", workerCount: 1, pinWorkers: false, logger: logger))
        let joiner = try await ClusterSystem(
            settings: ClusterSettings(
                seeds: [(clusters[0].node.host, clusters[0].node.port)], secret: "troupe-bench cluster-entities secret",
                callTimeout: .seconds(60), logger: logger),
            actorSystem: system)
        let clock = ContinuousClock()
        let sending = SendingFlag()
        // About 25,000 tells per second from each node, over every key in turn: half of what the
        // three nodes handle here (the tell row), so that the lines carry traffic, not a backlog
        // (a node's marker travels behind everything it sent before it).
        let senders = regions.enumerated().map { index, region in
            Task {
                var sent = 0
                var next = index
                while sending.isOn {
                    for _ in 0..<50 {
                        region.entity(keys[next % keys.count]).tell(.add)
                        next += 7
                    }
                    sent += 50
                    try? await Task.sleep(for: .milliseconds(2))
                }
                return sent
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        let joined = clock.now
        let newcomer = try await ClusterEntityRegion(cluster: joiner, kind: kind)
        let all = regions + [newcomer]
        var seenByAll: Duration?
        while !all.allSatisfy({ $0.members.count == 4 && $0.isSettled }) {
            if seenByAll == nil, all.allSatisfy({ $0.members.count == 4 }) { seenByAll = clock.now - joined }
            verify(clock.now - joined < .seconds(120), "cluster-entities: the join did not settle in 120 s")
            try await Task.sleep(for: .milliseconds(1))
        }
        let settled = clock.now - joined
        // Messages go on after the handoff, to the new home.
        try await Task.sleep(for: .milliseconds(300))
        sending.turnOff()
        var sent = entityCount
        for sender in senders { sent += await sender.value }
        try await waitFor(handled, toReach: sent, what: "the messages sent during the join")
        let moved = keys.count { newcomer.owner(of: $0) == joiner.node }
        let handedOff = regions.map(\.statistics.handedOff).reduce(0, +)
        verify(moved > 0 && handedOff >= moved, "cluster-entities: \(moved) identities moved, \(handedOff) handed off")
        verify(
            all.allSatisfy { $0.statistics.handoffTimeouts == 0 && $0.statistics.lostInTransit == 0 },
            "cluster-entities: a handoff timed out or lost items: \(all.map(\.statistics))")
        print(
            "a 4th node joins while 3 send to \(entityCount) active entities (about 25,000 tells/s each): every node sees it | s | \(fixed(seconds(seenByAll ?? settled), 3)) |"
        )
        print(
            "the same join: until every node settled (\(moved) identities moved: their old activations stopped, held messages delivered) | s | \(fixed(seconds(settled), 3)) | ≤ 10 s"
        )
        print(
            "messages lost in that join (sent \(sent), handled \(handled.value)) | count | \(sent - handled.value) | 0"
        )
        await joiner.shutdown()
        await system.shutdown()
    }

    private func waitFor(_ handled: HandledCount, toReach count: Int, what: String) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while handled.value < count {
            verify(
                ContinuousClock.now < deadline,
                "cluster-entities: \(what): \(handled.value) of \(count) messages handled after 120 s")
            try await Task.sleep(for: .milliseconds(2))
        }
        verify(handled.value == count, "cluster-entities: \(what): \(handled.value) handled, \(count) sent")
    }

    /// Asks every entity its count until it is `expected` (the tells from the other nodes are
    /// not ordered with these asks), 64 at a time, and checks that none goes beyond.
    private func confirm(
        _ keys: [String], in regions: [ClusterEntityRegion<EntityTally.Message>], expected: Int
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<64 {
                group.addTask {
                    var index = lane
                    while index < keys.count {
                        let key = keys[index]
                        let count = try await regions[0].entity(key).ask(TallyCount(), timeout: .seconds(60))
                        verify(count <= expected, "cluster-entities: \(key) counted \(count), expected \(expected)")
                        verify(
                            ContinuousClock.now < deadline,
                            "cluster-entities: \(key) counted \(count) of \(expected) after 120 s")
                        if count == expected { index += 64 }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}

/// An entity that counts what it is told and answers pings.
struct EntityTally: ActorDefinition {
    enum Message: Codable, Sendable {
        case add
        case ping(Reply<Int>)
        case count(Reply<Int>)

        // Only `add` travels; asks travel as requests (`TallyPing`, `TallyCount`).
        init(from decoder: any Decoder) throws { self = .add }
        func encode(to encoder: any Encoder) throws {
            guard case .add = self else {
                throw EncodingError.invalidValue(
                    self, .init(codingPath: [], debugDescription: "asks travel as requests"))
            }
            var container = encoder.singleValueContainer()
            try container.encode(UInt8(0))
        }
    }

    var counted = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .add: counted += 1
        case .ping(let reply): reply.succeed(1)
        case .count(let reply): reply.succeed(counted)
        }
    }
}

/// Messages handled by every `CountedEntity`, on any node of this process.
final class HandledCount: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

/// Whether the senders of the rebalance row go on.
final class SendingFlag: Sendable {
    private let on = Atomic<Bool>(true)
    var isOn: Bool { on.load(ordering: .relaxed) }
    func turnOff() { on.store(false, ordering: .relaxed) }
}

/// An entity whose handled messages are counted in one place, so that a move (which starts the
/// entity afresh on its new node) loses no count.
struct CountedEntity: ActorDefinition {
    enum Message: Codable, Sendable { case add }
    let handled: HandledCount

    func receive(_ message: Message, context: ActorContext<Message>) { handled.add() }
}

struct TallyPing: EntityRequest {
    func message(replyingTo reply: Reply<Int>) -> EntityTally.Message { .ping(reply) }
}

struct TallyCount: EntityRequest {
    func message(replyingTo reply: Reply<Int>) -> EntityTally.Message { .count(reply) }
}

private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

private func micros(_ nanoseconds: UInt64) -> String { fixed(Double(nanoseconds) / 1_000, 2) + " µs" }
