// troupe-bench: the Savina micro suite (plus CAF's N:1 test, spawn cost, latency percentiles
// and idle cost) on Troupe, Swift native actors and libdispatch serial queues.
// Usage: see `troupe-bench --help` and Benchmarks/README.md.

let arguments = Array(CommandLine.arguments.dropFirst())
let config = BenchConfig.parse(arguments)
printHeader(config, arguments: arguments)

/// Every workload, in report order; each returns its rows (Swift native, Dispatch, Troupe).
let workloads: [(BenchConfig) -> [Measurement]] = [
    pingPongRows, countingRows, threadRingRows, chameneosRows, bigRows,
    forkJoinThroughputRows, forkJoinCreationRows, fibonacciRows, fanInRows, spawnRows,
    pingPongLatencyRows, askLatencyRows, idleRows, memoryRows,
    poolRows, poolSkewRows, promiseCreateRows, promiseAskRows, pubSubFanOutRows,
    restartRows, timersArmCancelRows, timersLatenessRows, timersArmedRows,
]

var results: [Measurement] = []
for rows in workloads {
    results += rows(config)
}
troupe.shutdown()

if results.isEmpty {
    BenchConfig.usageError("--filter \(config.filters.joined(separator: ", ")) matches no row")
}
if config.allocationGuard {
    runAllocationGuard(results, config)
} else {
    report(results, config)
}
