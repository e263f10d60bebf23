// `troupe-bench cluster`: TroupeCluster's rows (issue 17).

import ArgumentParser
import Dispatch
import Foundation
import Synchronization

struct ClusterBenchOptions {
    var quick: Bool
    var trials: Int
    var convergenceTrials: Int
    var soakSeconds: Int
    /// Pin the latency rows' event loops (see ThreadPlacement.swift).
    var pinEventLoops: Bool
}

struct ClusterBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cluster",
        abstract: "TroupeCluster: remote calls, failure detection, join and convergence, false downs.",
        discussion: """
            Remote-call rows run two nodes in this process over loopback. Process rows start \
            troupe-cluster-node (build it first: swift build -c release --product troupe-cluster-node) \
            and kill, freeze and saturate them. Prints measured figures with the targets beside them.
            """)

    /// `--quick` is the parent command's flag (ArgumentParser gives a flag both commands
    /// declare to the parent): `troupe-bench cluster --quick` sets it there.
    @ParentCommand var parent: TroupeBench
    var quick: Bool { parent.quick }

    @Option(help: "Detection trials per signal (default 20; 3 with --quick).")
    var trials: Int?

    @Option(name: .customLong("soak-seconds"), help: "Length of the false-down soak (default 600; 15 with --quick).")
    var soakSeconds: Int?

    @Option(
        name: .customLong("node-binary"),
        help: "Path of troupe-cluster-node (default: $TROUPE_CLUSTER_NODE, else .build/release/troupe-cluster-node).")
    var nodeBinary: String?

    @Flag(name: .customLong("calls-only"), help: "Only the in-process remote-call rows (no child processes).")
    var callsOnly = false

    @Flag(
        name: .customLong("unpinned-event-loops"),
        help: ArgumentHelp(
            "Leave the latency rows' event loops where the scheduler puts them (default: the calling side's on "
                + "CPU 0, the answering side's on CPU 1, alike for raw NIO and TroupeCluster)."))
    var unpinnedEventLoops = false

    @Option(
        name: .customLong("profile-calls"),
        help: ArgumentHelp(
            "Only make this many remote calls (64 in flight, or --profile-in-flight; from tasks on Troupe's task "
                + "executor) and exit: "
                + "for profilers. Two counts give the marginal cost of one call (scripts/cluster-instructions.sh)."))
    var profileCalls: Int?

    @Flag(
        name: .customLong("profile-global-executor"),
        help: "With --profile-calls: the calling tasks run on Swift's global executor instead.")
    var profileGlobalExecutor = false

    @Option(
        name: .customLong("profile-in-flight"),
        help: "With --profile-calls: how many calls are in flight (default 64; 1 profiles the latency rows' form).")
    var profileInFlight = 64

    @Flag(
        name: .customLong("profile-raw-nio"),
        help: ArgumentHelp(
            "With --profile-calls: awaited raw NIO round trips of 64 B instead (one at a time, from a task on "
                + "Swift's global executor, as the latency rows' raw row): the baseline's instructions."))
    var profileRawNIO = false

    var binary: String {
        nodeBinary ?? ProcessInfo.processInfo.environment["TROUPE_CLUSTER_NODE"] ?? ".build/release/troupe-cluster-node"
    }

    func validate() throws {
        if let trials, trials < 1 { throw ValidationError("--trials needs a positive integer, got \(trials)") }
        if let soakSeconds, soakSeconds < 1 {
            throw ValidationError("--soak-seconds needs a positive integer, got \(soakSeconds)")
        }
        if profileInFlight < 1 {
            throw ValidationError("--profile-in-flight needs a positive integer, got \(profileInFlight)")
        }
        if let profileCalls, profileCalls < profileInFlight || profileCalls % profileInFlight != 0 {
            throw ValidationError(
                "--profile-calls needs a positive multiple of --profile-in-flight (\(profileInFlight)), got \(profileCalls)"
            )
        }
        if !callsOnly && profileCalls == nil && !FileManager.default.isExecutableFile(atPath: binary) {
            throw ValidationError(
                "no troupe-cluster-node at \(binary): build it (swift build -c release --product troupe-cluster-node), "
                    + "pass --node-binary, or use --calls-only")
        }
    }

    func run() throws {
        // Not `runBlocking`: its deadline is for one workload, and the process rows take minutes
        // (each row fails the run on its own deadline instead).
        if let profileCalls { return try runProfileCalls(profileCalls) }
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<[ClusterRow], any Error>?>(nil)
        Task.detached {
            let outcome: Result<[ClusterRow], any Error>
            do { outcome = .success(try await self.measure()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        let met = printClusterReport(try result.withLock { $0! }.get())
        print("\nTargets: \(met ? "all met" : "NOT all met (see MISSED)").")
    }

    func measure() async throws -> [ClusterRow] {
        let options = ClusterBenchOptions(
            quick: quick, trials: trials ?? (quick ? 3 : 20), convergenceTrials: quick ? 2 : 5,
            soakSeconds: soakSeconds ?? (quick ? 15 : 600), pinEventLoops: !unpinnedEventLoops)
        print("# troupe-bench cluster\(quick ? " --quick" : "")")
        print("Machine: \(ProcessInfo.processInfo.activeProcessorCount) CPUs. Process rows: troupe-cluster-node with")
        print("SWIM probe 500 ms (ping timeout 200 ms), suspicion 1.5 s, downing 2 s after unreachable.")
        var rows = try await clusterCallRows(options)
        rows += try await clusterBulkRows(options)
        rows += try await clusterTLSRows(options)
        if !callsOnly {
            rows += try await detectionRows(options, binary: binary)
            rows += try await convergenceRows(options, binary: binary)
            rows.append(try await soakRow(options, binary: binary))
        }
        return rows
    }
}

extension ClusterBench {
    /// `--profile-calls`: two nodes, a warm-up, then `count` calls and nothing else.
    func runProfileCalls(_ count: Int) throws {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<Int, any Error>?>(nil)
        Task.detached {
            let outcome: Result<Int, any Error>
            do {
                if profileRawNIO {
                    outcome = .success(try await profiledRawRounds(count))
                } else {
                    outcome = .success(
                        try await profiledCalls(
                            count, inFlight: profileInFlight, onGlobalExecutor: profileGlobalExecutor))
                }
            } catch {
                outcome = .failure(error)
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        let answered = try result.withLock { $0! }.get()
        print("\(answered) \(profileRawNIO ? "raw NIO round trips" : "remote calls answered")")
    }
}
