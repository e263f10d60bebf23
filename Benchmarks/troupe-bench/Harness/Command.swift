// The command line, on swift-argument-parser.

import ArgumentParser

struct TroupeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "troupe-bench",
        abstract: "The Savina micro suite and more on Troupe, Swift native actors and Dispatch queues.",
        discussion: """
            Rows print measured figures with their targets beside them; --quick verifies every \
            result at small sizes. The allocation guard compares allocations per message (counts, \
            never time) with a thresholds file.

            Workloads: \(Workload.allCases.map(\.rawValue).joined(separator: ", ")).
            TroupeCluster's rows: troupe-bench cluster --help. Durable actors on SQLite: \
            troupe-bench persistence --help. Virtual actors on one node: troupe-bench entities --help. \
            The cluster at 10 to 1,000 nodes, simulated: troupe-bench cluster-sim --help.
            """,
        subcommands: [
            ClusterBench.self, PersistenceBench.self, EntitiesBench.self, ClusterEntitiesBench.self, ObserverBench.self,
            ClusterSimulationBench.self,
        ])

    @Flag(help: "Every workload at a small size: verifies every result, finishes in seconds.")
    var quick = false

    @Flag(help: "Print a JSON array of measurements instead of the table.")
    var json = false

    @Option(
        name: .customLong("filter"),
        help: ArgumentHelp(
            "Run only matching rows (repeatable).",
            discussion: """
                A workload's name selects that workload; =Workload/System selects one row; anything \
                else is a case-insensitive substring of the workload or system name (e.g. Troupe).
                """, valueName: "name"))
    var filters: [String] = []

    @Option(help: "Run each throughput workload this many times and report the fastest.")
    var runs = 1

    @Flag(name: .customLong("no-warmup"), help: "Skip the unreported small warm-up run.")
    var noWarmup = false

    @Flag(
        help: """
            Also run PingPong, Counting, ThreadRing, ForkJoinCreation, Fibonacci and MemoryPerIdleActor on CAF and \
            Erlang/OTP (Benchmarks/peers/run.sh; a peer whose Debian package is missing is skipped).
            """)
    var peers = false

    @Flag(name: .customLong("baseline-full"), help: "Run the Swift native and Dispatch rows at the Troupe sizes.")
    var baselineFull = false

    @Option(
        name: .customLong("check-allocations"),
        help: ArgumentHelp(
            "Allocation guard: run the Troupe rows at guard sizes and compare allocations per message with this file.",
            discussion:
                "Exits 1 when a row exceeds its threshold plus tolerance (Benchmarks/Thresholds/allocations.json).",
            valueName: "file"))
    var checkAllocations: String?

    @Option(
        name: .customLong("record-allocations"),
        help: ArgumentHelp("Run the same rows and write their counts as a new thresholds file.", valueName: "file"))
    var recordAllocations: String?

    /// Every workload, in report order; each returns its rows (Swift native, Dispatch, Troupe).
    static var workloads: [(BenchConfig) -> [Measurement]] {
        [
            pingPongRows, countingRows, threadRingRows, chameneosRows, bigRows,
            forkJoinThroughputRows, forkJoinCreationRows, fibonacciRows, fanInRows, spawnRows,
            pingPongLatencyRows, askLatencyRows, idleRows, memoryRows,
            poolRows, poolSkewRows, promiseCreateRows, promiseAskRows, pubSubFanOutRows,
            restartRows, timersArmCancelRows, timersLatenessRows, timersArmedRows,
        ]
    }

    /// The run's parameters.
    var benchConfig: BenchConfig {
        var config = BenchConfig()
        config.quick = quick
        config.json = json
        config.filters = filters
        config.runs = runs
        config.warmUp = !noWarmup
        config.baselineFull = baselineFull
        config.checkAllocationsFile = checkAllocations
        config.recordAllocationsFile = recordAllocations
        config.applyModes()
        return config
    }

    func validate() throws {
        guard runs >= 1 else { throw ValidationError("--runs needs a positive integer, got \(runs)") }
        if checkAllocations != nil && recordAllocations != nil {
            throw ValidationError("--check-allocations and --record-allocations are exclusive")
        }
        if !benchConfig.selectsAnyRow {
            throw ValidationError("--filter \(filters.joined(separator: ", ")) matches no row")
        }
    }

    func run() throws {
        let config = benchConfig
        printHeader(config, arguments: Array(CommandLine.arguments.dropFirst()))
        var results: [Measurement] = []
        for rows in Self.workloads { results += rows(config) }
        troupe.shutdown()
        if peers && !config.allocationGuard { results += peerRows(config) }
        if results.isEmpty {
            BenchConfig.usageError("--filter \(config.filters.joined(separator: ", ")) matches no row")
        }
        if config.allocationGuard {
            runAllocationGuard(results, config)
        } else {
            report(results, config)
        }
    }
}
