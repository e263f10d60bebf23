// `troupe-bench cluster-sim`: TroupeCluster's membership at 10 to 1,000 (and more) nodes in the
// simulator (issue 34): crash detection and dissemination, false suspicions and downs under
// loss and pauses with Lifeguard on and off, per-node traffic, join convergence, entities moved
// by a join, and thousands of seeded fault schedules checked for the properties.

import ArgumentParser
import Foundation
import TroupeClusterMembership
import TroupeClusterSimulator

struct ClusterSimulationBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster-sim",
        abstract: "TroupeCluster's membership at 10 to 1,000 nodes, simulated on virtual time.",
        discussion: """
            Every figure is virtual time in the simulator (TroupeClusterSimulator): the real SWIM \
            state machine on each node, a simulated network (log-normal latency, median 250 µs, \
            p99 2 ms; 1 % of messages lost), clocks that drift up to 100 ppm. Crash rows vanish \
            nodes silently (only probes find them). False positives are suspicions (and downs) \
            of members that were up, per node-hour, with Lifeguard on and off. Traffic is \
            membership frames as TroupeCluster writes them. Exits 1 when a seeded schedule \
            breaks a property (it prints the seed and the trace).
            """)

    @ParentCommand var parent: TroupeBench
    var quick: Bool { parent.quick }

    @Option(help: "Cluster sizes (default 10,100,1000; 10,100 with --quick).")
    var nodes: String?

    @Option(help: "Seeded fault schedules at 5 to 8 nodes (default 2,000).")
    var schedules: Int = 2_000

    @Option(
        help: "Simulated seconds of the false-positive rows (default 30,000 / nodes, 30 to 600; 60 with --quick).")
    var seconds: Int?

    @Option(help: "Entities placed for the join row (default 1,000,000; 100,000 with --quick).")
    var entities: Int?

    @Option(help: "Write the sweep as an SVG chart to this file.")
    var svg: String?

    @Option(help: "The first seed (each run uses its own from here).")
    var seed: UInt64 = 1

    @Option(name: .customLong("gossip-repeats"), help: "Override the membership's gossipRepeats (exploration).")
    var gossipRepeats: Int?

    @Option(name: .customLong("only"), help: "Run only these row groups: crash, false, join, entities, schedules.")
    var only: [String] = []

    func wants(_ group: String) -> Bool { only.isEmpty || only.contains(group) }

    @Flag(
        help: """
            Also the fidelity rows: `troupe-bench cluster`'s process scenarios simulated, beside the same \
            scenarios on troupe-cluster-node processes when --node-binary (or $TROUPE_CLUSTER_NODE) names one.
            """)
    var fidelity = false

    @Option(name: .customLong("node-binary"), help: "troupe-cluster-node, for the fidelity rows' processes.")
    var nodeBinary: String?

    func run() throws {
        let sizes = (nodes ?? (quick ? "10,100" : "10,100,1000")).split(separator: ",").compactMap { Int($0) }
        var membership = ClusterMembershipSettings()
        if let gossipRepeats { membership.gossipRepeats = gossipRepeats }
        print(
            """
            TroupeCluster membership, simulated (probe interval \(membership.probeInterval), suspicion timeout \
            \(membership.suspicionTimeout) × up to \(membership.suspicionMaximumMultiplier), down after \
            \(membership.downAfter); 1 % loss)
            """)
        print("row | nodes | measure | value | target")
        print("---|---|---|---|---")
        var points: [SweepPoint] = []
        for size in sizes {
            let started = Date()
            var point = SweepPoint(nodes: size)
            // Each group's rows out as they are measured (the 1,000-node rows take minutes).
            if wants("crash") { detectionRows(size, membership: membership, into: &point) }
            fflush(nil)
            // A shorter window for large clusters: at least 8 node-hours each, in minutes (an
            // overloaded 1,000-node cluster costs the simulator about 3 s a simulated second).
            let window = seconds ?? (quick ? 60 : min(600, max(30, 30_000 / size)))
            if wants("false") { falsePositiveRows(size, seconds: window, membership: membership, into: &point) }
            fflush(nil)
            if wants("join") { joinRows(size, membership: membership) }
            if wants("entities") { placementRow(size) }
            fflush(nil)
            print(
                "simulator | \(size) | wall time for this size's rows | \(fixed(Date().timeIntervalSince(started), 1)) s | minutes at 1,000"
            )
            points.append(point)
        }
        trafficRow(points)
        let failed = wants("schedules") && scheduleRows(count: schedules, membership: membership)
        if fidelity {
            let (trials, convergenceTrials) = quick ? (3, 2) : (20, 5)
            let scenarios = simulatedFidelityScenarios(trials: trials, convergenceTrials: convergenceTrials, seed: seed)
            let binary = nodeBinary ?? ProcessInfo.processInfo.environment["TROUPE_CLUSTER_NODE"]
            printFidelity(
                scenarios,
                real: try realFidelityRows(binary: binary, trials: trials, convergenceTrials: convergenceTrials))
        }
        if let svg {
            try SweepChart(points: points, detectionTarget: Self.detectionTarget(membership)).svg.write(
                toFile: svg, atomically: true, encoding: .utf8)
        }
        if failed { throw ExitCode(1) }
    }

    /// The issue's bound on a crash's detection: 5 protocol periods plus the suspicion timeout.
    static func detectionTarget(_ membership: ClusterMembershipSettings) -> Duration {
        membership.probeInterval * 5 + membership.suspicionTimeout
    }

    // MARK: Rows

    /// Silent crashes one after another in a formed cluster with 1 % loss (20; 3 with
    /// --quick), each victim restarted as a new member before the next, so the cluster keeps
    /// its size.
    func detectionRows(_ size: Int, membership: ClusterMembershipSettings, into point: inout SweepPoint) {
        var settings = ClusterSimulationSettings(nodes: size, seed: seed &+ UInt64(size), membership: membership)
        settings.loss = 0.01
        settings.traceCapacity = 0
        let simulation = ClusterSimulation(settings)
        let crashes = quick ? 3 : 20
        let spacing = settings.detectionBound + .seconds(5)
        for crash in 0..<crashes {
            let victim = (1 + crash * 7919) % size
            let at = .seconds(10) + spacing * crash
            simulation.schedule(.vanish(node: victim), at: at)
            simulation.schedule(.restart(node: victim), at: at + settings.detectionBound + .seconds(1))
        }
        simulation.run(until: .seconds(10) + spacing * crashes)
        let report = simulation.report
        let first = report.crashes.compactMap(\.firstSuspicion)
        let everywhere = report.crashes.compactMap(\.unreachableEverywhere)
        let down = report.crashes.compactMap(\.downEverywhere)
        let perNode = report.crashes.flatMap { $0.unreachableAfter.values }
        // Each node's time split in two: until it suspected the crashed node (its own probe or
        // gossip), then its own suspicion timer (3 s fully confirmed, up to 9 s unconfirmed).
        let heard = report.crashes.flatMap { crash in
            crash.unreachableAfter.keys.compactMap { crash.suspectedAfter[$0] }
        }
        let ownTimer = report.crashes.flatMap { crash in
            crash.unreachableAfter.compactMap { node, unreachable in crash.suspectedAfter[node].map { unreachable - $0 }
            }
        }
        let target = Self.detectionTarget(membership)
        let detected = "\(everywhere.count)/\(report.crashes.count) crashes"
        print(
            "crash | \(size) | first suspicion p50 / max | \(inSeconds(percentile(first, 50))) / \(inSeconds(first.max())) |"
        )
        print(
            "crash | \(size) | seen unreachable by each node, p50 / p99 | \(inSeconds(percentile(perNode, 50))) / \(inSeconds(percentile(perNode, 99))) |"
        )
        print(
            "crash | \(size) | of which: suspected it (own probe or gossip), p50 / p99 | \(inSeconds(percentile(heard, 50))) / \(inSeconds(percentile(heard, 99))) |"
        )
        print(
            "crash | \(size) | of which: own suspicion timer, p50 / p99 | \(inSeconds(percentile(ownTimer, 50))) / \(inSeconds(percentile(ownTimer, 99))) |"
        )
        print(
            "crash | \(size) | unreachable everywhere p50 / max (\(detected)) | \(inSeconds(percentile(everywhere, 50))) / \(inSeconds(everywhere.max())) | p99 ≤ \(inSeconds(target)) (5 periods + suspicion timeout)"
        )
        print(
            "crash | \(size) | down everywhere p50 / max | \(inSeconds(percentile(down, 50))) / \(inSeconds(down.max())) | + down after \(membership.downAfter)"
        )
        point.unreachableEverywhere = everywhere.max()
        point.unreachableMedian = percentile(everywhere, 50)
    }

    /// A formed cluster for `seconds` with 1 % loss, then the same with pauses, then with
    /// overloaded nodes; Lifeguard on and off.
    func falsePositiveRows(
        _ size: Int, seconds: Int, membership: ClusterMembershipSettings, into point: inout SweepPoint
    ) {
        for lifeguard in [true, false] {
            for disturbance in ["", " + pauses", " + overloaded nodes"] {
                var settings = ClusterSimulationSettings(
                    nodes: size, seed: seed &+ UInt64(size) &* 31,
                    membership: lifeguard ? membership : ClusterSimulationSettings.withoutLifeguard(membership))
                settings.loss = 0.01
                settings.traceCapacity = 0
                let simulation = ClusterSimulation(settings)
                // Each node is disturbed once per 10 minutes on average: a pause of 0.2 to 2 s
                // (a GC, a stolen CPU), or 30 s of reading every message 0.5 to 1.5 s late.
                var draws = PauseDraws(state: settings.seed)
                for _ in 0..<(disturbance.isEmpty ? 0 : max(1, size * seconds / 600)) {
                    let at = Duration.milliseconds(Int64(draws.next() % UInt64(seconds * 1_000)))
                    let node = Int(draws.next() % UInt64(size))
                    let length = Duration.milliseconds(200 + Int64(draws.next() % 1_800))
                    let delay = Duration.milliseconds(500 + Int64(draws.next() % 1_000))
                    simulation.schedule(
                        disturbance == " + pauses"
                            ? .pause(node: node, for: length) : .slow(node: node, by: delay, for: .seconds(30)),
                        at: at)
                }
                let started = Date()
                simulation.run(until: .seconds(seconds))
                let wall = Date().timeIntervalSince(started)
                let report = simulation.report
                let label = "\(lifeguard ? "Lifeguard on" : "Lifeguard off"), 1 % loss\(disturbance)"
                let suspicions = Double(report.falseSuspicions) / report.nodeHours
                let ofHealthy = Double(report.falseSuspicionsOfHealthyMembers) / report.nodeHours
                let downs = Double(report.falseDowns) / report.nodeHours
                print(
                    "false positives | \(size) | \(label): suspicions (of healthy members) / downs per node-hour (\(fixed(report.nodeHours, 1)) node-hours) | \(fixed(suspicions, 2)) (\(fixed(ofHealthy, 2))) / \(fixed(downs, 3)) | \(disturbance.isEmpty ? "≤ 0.1 / 0 with Lifeguard" : "")"
                )
                if disturbance == " + overloaded nodes" {
                    if lifeguard {
                        point.healthySuspicionsOverloaded.on = ofHealthy
                    } else {
                        point.healthySuspicionsOverloaded.off = ofHealthy
                    }
                }
                if lifeguard && disturbance.isEmpty {
                    point.bytesPerNodeSecond = report.bytesPerNodeSecond
                    print(
                        "traffic | \(size) | membership messages / bytes per node-second | \(fixed(report.messagesPerNodeSecond, 2)) / \(fixed(report.bytesPerNodeSecond, 0)) |"
                    )
                    print(
                        "simulator | \(size) | events per second of wall time (\(report.eventsProcessed) events, \(fixed(wall, 1)) s for \(seconds) simulated s) | \(fixed(Double(report.eventsProcessed) / wall, 0)) |"
                    )
                }
            }
        }
    }

    /// Five joins, 5 s apart, into a formed cluster with 1 % loss.
    func joinRows(_ size: Int, membership: ClusterMembershipSettings) {
        var settings = ClusterSimulationSettings(nodes: size, seed: seed &+ UInt64(size) &* 97, membership: membership)
        settings.loss = 0.01
        settings.traceCapacity = 0
        let simulation = ClusterSimulation(settings)
        for join in 0..<5 { simulation.schedule(.join, at: .seconds(5 + 5 * join)) }
        simulation.run(until: .seconds(60))
        let converged = simulation.report.joins.compactMap(\.convergedAfter)
        print(
            "join | \(size) | every node has the newcomer alive, p50 / max (\(converged.count)/5 joins) | \(inSeconds(percentile(converged, 50))) / \(inSeconds(converged.max())) |"
        )
    }

    func placementRow(_ size: Int) {
        let entities = self.entities ?? (quick ? 100_000 : 1_000_000)
        let (moved, allToNewcomer) = PlacementMoves.onJoin(members: size, entities: entities, seed: seed)
        let ideal = 1 / Double(size + 1)
        print(
            "entities | \(size) | moved when one node joins, of \(entities) (all to the newcomer: \(allToNewcomer)) | \(fixed(moved * 100, 3)) % = \(fixed(moved / ideal, 3)) × 1/(N+1) | ≤ 1.2 × 1/(N+1)"
        )
    }

    func trafficRow(_ points: [SweepPoint]) {
        let rates = points.map(\.bytesPerNodeSecond).filter { $0 > 0 }
        guard let low = rates.min(), let high = rates.max(), low > 0 else { return }
        print(
            "traffic | \(points.map { "\($0.nodes)" }.joined(separator: "→")) | bytes per node-second, largest / smallest | \(fixed(high / low, 2))× | ≤ 2× (independent of N)"
        )
    }

    /// Seeded fault schedules at 5 to 8 nodes; returns whether one broke a property.
    func scheduleRows(count: Int, membership: ClusterMembershipSettings) -> Bool {
        let started = Date()
        var falseDowns = 0
        var removals = 0
        var handshakes = 0
        var handshakeFailures = 0
        var strangers = 0
        var strangersRefused = 0
        var listingUpdates = 0
        var firstFailure: String?
        var failures = 0
        var brokenSeeds: [UInt64] = []
        for offset in 0..<count {
            let scheduleSeed = seed &+ 10_000 &+ UInt64(offset)
            let run = SeededScheduleRun(seed: scheduleSeed, membership: membership)
            let (simulation, violations) = (run.simulation, run.violations)
            falseDowns += simulation.report.falseDowns
            removals += simulation.report.removals
            handshakes += simulation.report.handshakesCompleted
            handshakeFailures += simulation.report.handshakeFailures
            strangers += simulation.report.strangerConnections
            strangersRefused += simulation.report.strangersRefused
            listingUpdates += simulation.report.receptionistUpdates
            if !violations.isEmpty {
                failures += 1
                if brokenSeeds.count < 20 { brokenSeeds.append(scheduleSeed) }
                if firstFailure == nil {
                    firstFailure = "seed \(scheduleSeed) (\(run.nodes) nodes): \(violations)\n\(simulation.trace)"
                }
            }
        }
        print(
            "schedules | 5–8 | seeded fault schedules broken (of \(count); \(falseDowns) explained downs) | \(failures) | 0 (\(fixed(Date().timeIntervalSince(started), 1)) s)"
        )
        print(
            "schedules | 5–8 | handshakes completed / ends failed; members removed by a proved \"you are down\" | \(handshakes) / \(handshakeFailures); \(removals) |"
        )
        print(
            "schedules | 5–8 | strangers refused at the node they dialled / dialled (the rest lost or cut on the way) | \(strangersRefused) / \(strangers) | none admitted (a violation)"
        )
        print(
            "schedules | 5–8 | receptionist updates sent (3 actors per node, one out and one in every 2 s; every listing checked after the faults) | \(listingUpdates) |"
        )
        if !brokenSeeds.isEmpty {
            let more = failures > brokenSeeds.count ? ", …" : ""
            print("\nBROKEN SEEDS: \(brokenSeeds.map(String.init).joined(separator: ", "))\(more)")
        }
        if let firstFailure {
            print(
                "\nFIRST FAILING SCHEDULE (replay: SeededScheduleRun(seed:), TroupeClusterSimulator)\n\(firstFailure)")
        }
        return failures > 0
    }
}

/// One cluster size's figures for the chart.
struct SweepPoint {
    let nodes: Int
    /// The crashes' times to be seen unreachable by every node: the worst, and the median.
    var unreachableEverywhere: Duration?
    var unreachableMedian: Duration?
    var bytesPerNodeSecond = 0.0
    /// Suspicions of healthy members per node-hour with overloaded nodes, Lifeguard on and off:
    /// what Lifeguard buys (under loss alone both are 0 at every size).
    var healthySuspicionsOverloaded: (on: Double?, off: Double?) = (nil, nil)
}

private func percentile(_ values: [Duration], _ p: Double) -> Duration? {
    guard !values.isEmpty else { return nil }
    let sorted = values.sorted()
    let rank = Int((Double(sorted.count) * p / 100).rounded(.up)) - 1
    return sorted[min(sorted.count - 1, max(0, rank))]
}

private func inSeconds(_ duration: Duration?) -> String {
    guard let duration else { return "–" }
    let (whole, attoseconds) = duration.components
    return "\(fixed(Double(whole) + Double(attoseconds) / 1e18, 2)) s"
}

/// The pauses' times, lengths and nodes: a 64-bit LCG (Knuth's MMIX constants), seeded.
private struct PauseDraws {
    var state: UInt64
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 11
    }
}
