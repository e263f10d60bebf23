// Parameters of a run (the command line is in Command.swift).

import Glibc

struct BenchConfig: Sendable {
    /// `--quick`: every workload at a small size; results verified, figures not meaningful.
    var quick = false
    /// `--json`: a JSON array of measurements on stdout instead of the table.
    var json = false
    /// `--filter NAME` (repeatable).
    var filters: [String] = []
    /// `--runs N`: keep the fastest of N runs.
    var runs = 1
    /// Throughput workloads first run once at a small size (not reported) unless quick.
    var warmUp = true
    /// `--baseline-full`: Swift native and Dispatch rows run at the Troupe sizes.
    var baselineFull = false
    /// `--check-allocations FILE`: the allocation guard (see AllocationGuard.swift).
    var checkAllocationsFile: String?
    /// `--record-allocations FILE`: measure and write a thresholds file.
    var recordAllocationsFile: String?
    /// Whether the allocation guard is running (guard sizes, Troupe rows only).
    var allocationGuard: Bool { checkAllocationsFile != nil || recordAllocationsFile != nil }

    // Fixed parameters (Savina's defaults where the machine allows).
    /// ThreadRing: actors in the ring (Savina: 100).
    var ringActors = 100
    /// Chameneos: number of chameneos (Savina: 100).
    var chameneos = 100
    /// Big: number of actors (Savina: 120).
    var bigActors = 120
    /// ForkJoinThroughput: number of actors (Savina: 60).
    var forkJoinActors = 60
    /// FanIn: producers.
    var fanInProducers = 8
    /// IdleCPU: actors alive during the idle window, and its length.
    var idleActors = 1_000
    var idleSeconds = 1.0
    /// MemoryPerIdleActor: actors created and kept alive.
    var memoryActors = 100_000
    /// Pool, PoolSkew: members per pool (firstFreeOrGrow may grow to twice as many).
    var poolMembers = 4
    /// PoolSkew: spin iterations per message of an ordinary member; member 0 spins 10× more.
    var poolSkewSpin = 200
    /// PubSubFanOut: subscribers of the topic.
    var pubSubSubscribers = 1_000
    /// Restart (requestRestart row): idle actors restarted per round; the driver waits for a
    /// round's restarts before the next, so that no request coalesces with a pending one.
    var restartRoundActors = 1_000
    /// TimersArmCancel, TimersMemory, TimersIdleCPU: timers active in the system (armed far in
    /// the future), `timersPerActor` per holder actor.
    var activeTimers = 100_000
    var timersPerActor = 100
    /// TimersLateness: deadlines spread uniformly over this window, in seconds after arming.
    var latenessWindow = (from: 0.5, to: 1.0)
    /// TimersLateness: how long to keep listening for a second firing after the last timer fired.
    var latenessGraceSeconds = 0.1

    /// Sizes per workload. Swift native and Dispatch rows use smaller sizes where their forms are
    /// 10–100× slower (AsyncStream, queue.async): rates are per unit, so rows stay comparable,
    /// and a full run stays near three minutes.
    var sizes: [Workload: SizeSpec] = [
        .pingPong: SizeSpec(
            troupe: 2_000_000, native: 10_000_000, dispatch: 100_000, quick: 10_000, guardSize: 200_000,
            meaning: "round trips"),
        .counting: SizeSpec(
            troupe: 10_000_000, native: 10_000_000, dispatch: 1_000_000, quick: 50_000, guardSize: 1_000_000,
            meaning: "increments", secondary: "AsyncStream row: native ÷ 10"),
        .threadRing: SizeSpec(
            troupe: 5_000_000, native: 5_000_000, dispatch: 200_000, quick: 20_000, guardSize: 500_000,
            meaning: "hops", secondary: "AsyncStream row: native ÷ 20"),
        .chameneos: SizeSpec(
            troupe: 1_000_000, native: 200_000, dispatch: 100_000, quick: 5_000, guardSize: 100_000,
            meaning: "meetings"),
        .big: SizeSpec(
            troupe: 20_000, native: 20_000, dispatch: 1_000, quick: 100, guardSize: 2_000,
            meaning: "pings per actor"),
        .forkJoinThroughput: SizeSpec(
            troupe: 50_000, native: 100_000, dispatch: 10_000, quick: 500, guardSize: 10_000,
            meaning: "messages per actor"),
        .forkJoinCreation: SizeSpec(
            troupe: 500_000, native: 1_000_000, dispatch: 100_000, quick: 5_000, guardSize: 50_000,
            meaning: "actors"),
        .fibonacci: SizeSpec(
            troupe: 27, native: 29, dispatch: 22, quick: 15, guardSize: 20,
            meaning: "n of fib(n)", secondary: "async let row: n − 3"),
        .fanIn: SizeSpec(
            troupe: 1_000_000, native: 1_000_000, dispatch: 100_000, quick: 10_000, guardSize: 100_000,
            meaning: "messages per producer", secondary: "AsyncStream row: native ÷ 10"),
        .spawn: SizeSpec(
            troupe: 200_000, native: 500_000, dispatch: 100_000, quick: 5_000, guardSize: 50_000,
            meaning: "actors"),
        .pingPongLatency: SizeSpec(
            troupe: 500_000, native: 500_000, dispatch: 50_000, quick: 5_000, guardSize: 50_000,
            meaning: "round trips"),
        .askLatency: SizeSpec(
            troupe: 200_000, native: 1_000_000, dispatch: 50_000, quick: 2_000, guardSize: 20_000,
            meaning: "asks", secondary: "ask from a task, askBlocking: Troupe ÷ 4"),
        .idleCPU: SizeSpec(
            troupe: 1_000, native: 1_000, dispatch: 1_000, quick: 1_000, guardSize: 0, meaning: "actors"),
        .memoryPerIdleActor: SizeSpec(
            troupe: 100_000, native: 100_000, dispatch: 100_000, quick: 10_000, guardSize: 0,
            meaning: "actors"),
        .pool: SizeSpec(
            troupe: 2_000_000, native: 2_000_000, dispatch: 2_000_000, quick: 10_000, guardSize: 200_000,
            meaning: "messages told (broadcast: each to every member)"),
        .poolSkew: SizeSpec(
            troupe: 200_000, native: 200_000, dispatch: 200_000, quick: 2_000, guardSize: 20_000,
            meaning: "messages"),
        .promiseCreate: SizeSpec(
            troupe: 1_000_000, native: 1_000_000, dispatch: 1_000_000, quick: 10_000, guardSize: 100_000,
            meaning: "promises"),
        .promiseAsk: SizeSpec(
            troupe: 200_000, native: 200_000, dispatch: 200_000, quick: 2_000, guardSize: 20_000,
            meaning: "asks"),
        .pubSubFanOut: SizeSpec(
            troupe: 2_000, native: 2_000, dispatch: 2_000, quick: 20, guardSize: 200,
            meaning: "publications"),
        .restart: SizeSpec(
            troupe: 200_000, native: 1_000_000, dispatch: 0, quick: 2_000, guardSize: 20_000,
            meaning: "restarts (spawn+stop: actors, ÷ 2; native: actors created)",
            secondary: "spawn+stop row: Troupe ÷ 2"),
        .timersArmCancel: SizeSpec(
            troupe: 1_000_000, native: 1_000_000, dispatch: 0, quick: 10_000, guardSize: 100_000,
            meaning: "start+cancel pairs"),
        .timersLateness: SizeSpec(
            troupe: 10_000, native: 10_000, dispatch: 0, quick: 1_000, guardSize: 0,
            meaning: "single timers"),
        .timersMemory: SizeSpec(
            troupe: 100_000, native: 100_000, dispatch: 0, quick: 10_000, guardSize: 0,
            meaning: "timers"),
        .timersIdleCPU: SizeSpec(
            troupe: 100_000, native: 100_000, dispatch: 0, quick: 10_000, guardSize: 0,
            meaning: "timers"),
    ]

    /// The size of `workload` for a row of `family`.
    func size(_ workload: Workload, _ family: SizeFamily) -> Int {
        let spec = sizes[workload]!
        if allocationGuard { return spec.guardSize }
        if quick { return spec.quick }
        switch family {
        case .troupe: return spec.troupe
        case .native: return baselineFull ? spec.troupe : spec.native
        case .dispatch: return baselineFull ? spec.troupe : spec.dispatch
        }
    }

    /// The unreported warm-up size: 1/100 (fib: n - 8).
    func warmUpSize(_ workload: Workload, _ size: Int) -> Int {
        workload == .fibonacci ? max(size - 8, 2) : max(size / 100, 1)
    }

    /// Whether the (workload, system) pair was selected by `--filter`. A filter equal to a
    /// workload's name selects that workload only; "=Workload/System" selects one row; anything
    /// else matches workload or system names as a case-insensitive substring.
    func includes(_ workload: Workload, system: String) -> Bool {
        if allocationGuard && (!system.hasPrefix(BenchSystem.troupePrefix) || workload.excludedFromAllocationGuard) {
            return false
        }
        if filters.isEmpty { return true }
        let workloadName = workload.rawValue.lowercased()
        let systemName = system.lowercased()
        let row = "\(workloadName)/\(systemName)"
        return filters.contains { filter in
            let f = filter.lowercased()
            if f.hasPrefix("=") { return String(f.dropFirst()) == row }
            if Workload.allCases.contains(where: { $0.rawValue.lowercased() == f }) { return f == workloadName }
            return workloadName.contains(f) || systemName.contains(f) || row.contains(f)
        }
    }

    /// Settles what the flags imply: quick sizes, the allocation guard's sizes and runs.
    mutating func applyModes() {
        if quick {
            idleSeconds = 0.2
            memoryActors = sizes[.memoryPerIdleActor]!.quick
            activeTimers = sizes[.timersMemory]!.quick
            latenessWindow = (from: 0.05, to: 0.1)
            latenessGraceSeconds = 0.02
            warmUp = false
        }
        if allocationGuard {
            // TimersArmCancel's background timers: enough for a deep heap, quick to set up.
            activeTimers = 10_000
            quick = false
            warmUp = true
            runs = max(runs, 3)
        }
    }

    /// Whether any row passes the filters.
    var selectsAnyRow: Bool {
        Workload.allCases.contains { workload in
            BenchSystem.all.contains { includes(workload, system: $0) }
        }
    }

    /// A usage error found after parsing: exit status 64 (EX_USAGE), as ArgumentParser's own.
    static func usageError(_ message: String) -> Never {
        printError("troupe-bench: \(message)\nSee 'troupe-bench --help'.")
        exit(64)
    }
}
