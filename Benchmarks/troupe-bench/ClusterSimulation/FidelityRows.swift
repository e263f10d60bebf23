// The simulator against real node processes: the scenarios of `troupe-bench cluster`'s process
// rows (kill -9 and SIGSTOP of one of three nodes; three and five nodes started at once through
// one seed) with the same SWIM timings, simulated with this machine's loopback latency, beside
// the same rows measured on troupe-cluster-node processes in the same run.

import Foundation
import Synchronization
import TroupeClusterMembership
import TroupeClusterSimulator

/// The process rows' SWIM timings (`processTiming`: probe 500 ms, ping timeout 200 ms,
/// suspicion 1.5 s, down 2 s after unreachable), as troupe-cluster-node sets them.
func processMembership() -> ClusterMembershipSettings {
    var membership = ClusterMembershipSettings()
    membership.probeInterval = .milliseconds(500)
    membership.pingTimeout = .milliseconds(200)
    membership.suspicionTimeout = .milliseconds(1_500)
    membership.downAfter = .seconds(2)
    return membership
}

struct FidelityScenario {
    let row: String
    let simulated: [Duration]
}

/// Each scenario `trials` times in the simulator, a seed per trial.
func simulatedFidelityScenarios(trials: Int, convergenceTrials: Int, seed: UInt64) -> [FidelityScenario] {
    var scenarios: [FidelityScenario] = []
    // A stopped process answers nothing and refuses nothing, as a vanished one: the same to
    // its peers until it is resumed.
    for (label, fault) in [("kill -9", SimulatedFault.kill(node: 2)), ("SIGSTOP", .vanish(node: 2))] {
        var unreachable: [Duration] = []
        var down: [Duration] = []
        for trial in 0..<trials {
            var settings = ClusterSimulationSettings(
                nodes: 3, seed: seed &+ UInt64(trial), membership: processMembership())
            settings.latency = .localMachine
            settings.traceCapacity = 0
            // As the process rows: the victim joins through a node, and is signalled as soon as
            // everyone sees everyone (their poll: every 10 ms).
            settings.formed = false
            let simulation = ClusterSimulation(settings)
            simulation.schedule(fault, at: .milliseconds(100))
            simulation.run(until: .seconds(20))
            if let crash = simulation.report.crashes.first {
                if let seen = crash.unreachableEverywhere { unreachable.append(seen) }
                if let seen = crash.downEverywhere { down.append(seen) }
            }
        }
        scenarios.append(FidelityScenario(row: "\(label): every node sees it unreachable", simulated: unreachable))
        scenarios.append(FidelityScenario(row: "\(label): every node sees it down", simulated: down))
    }
    for count in [3, 5] {
        var join: [Duration] = []
        var convergence: [Duration] = []
        for trial in 0..<convergenceTrials {
            var settings = ClusterSimulationSettings(
                nodes: count, seed: seed &+ 1_000 &+ UInt64(trial), membership: processMembership())
            settings.formed = false
            settings.latency = .localMachine
            settings.traceCapacity = 0
            let simulation = ClusterSimulation(settings)
            simulation.run(until: .seconds(10))
            let joins = simulation.report.joins
            if let last = joins.compactMap({ $0.seenAliveAfter[0] }).max() { join.append(last) }
            if joins.allSatisfy({ $0.convergedAfter != nil }) {
                convergence.append(joins.compactMap(\.convergedAfter).max()!)
            }
        }
        scenarios.append(FidelityScenario(row: "Join, \(count) nodes", simulated: join))
        scenarios.append(FidelityScenario(row: "Convergence, \(count) nodes", simulated: convergence))
    }
    return scenarios
}

/// The same rows on processes (`troupe-bench cluster`'s), or nil without a node binary.
func realFidelityRows(binary: String?, trials: Int, convergenceTrials: Int) throws -> [ClusterRow]? {
    guard let binary, FileManager.default.isExecutableFile(atPath: binary) else { return nil }
    let options = ClusterBenchOptions(
        quick: false, trials: trials, convergenceTrials: convergenceTrials, soakSeconds: 0, pinEventLoops: false)
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<[ClusterRow], any Error>?>(nil)
    Task.detached {
        let outcome: Result<[ClusterRow], any Error>
        do {
            outcome = .success(
                try await detectionRows(options, binary: binary) + convergenceRows(options, binary: binary))
        } catch {
            outcome = .failure(error)
        }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0! }.get()
}

/// Prints each scenario simulated beside measured, with the ratio of their medians (the
/// issue's bound: within 1.5×).
func printFidelity(_ scenarios: [FidelityScenario], real: [ClusterRow]?) {
    print("\nFidelity: the process rows' scenarios simulated (loopback latency) and on troupe-cluster-node processes")
    print("row | simulated p50 / max | processes p50 / max | p50 ratio (simulated / processes) | target")
    print("---|---|---|---|---")
    for scenario in scenarios {
        let simulated =
            "\(milliseconds(median(scenario.simulated))) / \(milliseconds(scenario.simulated.max())) (n=\(scenario.simulated.count))"
        guard let row = real?.first(where: { $0.name == scenario.row }), let latency = row.latency else {
            print("\(scenario.row) | \(simulated) | (no node binary: --node-binary) | | within 1.5×")
            continue
        }
        let realP50 = Duration.nanoseconds(Int64(latency.p50))
        let ratio = median(scenario.simulated).map { seconds($0) / max(1e-9, seconds(realP50)) }
        let verdict = ratio.map { $0 >= 1 / 1.5 && $0 <= 1.5 ? "met" : "MISSED" } ?? ""
        print(
            "\(scenario.row) | \(simulated) | \(milliseconds(realP50)) / \(milliseconds(.nanoseconds(Int64(latency.max)))) (n=\(latency.count)) | \(ratio.map { fixed($0, 2) + "×" } ?? "–") | within 1.5×: \(verdict)"
        )
    }
}

private func median(_ values: [Duration]) -> Duration? {
    values.isEmpty ? nil : values.sorted()[(values.count - 1) / 2]
}

private func seconds(_ duration: Duration) -> Double {
    let (whole, attoseconds) = duration.components
    return Double(whole) + Double(attoseconds) / 1e18
}

private func milliseconds(_ duration: Duration?) -> String {
    guard let duration else { return "–" }
    return "\(fixed(seconds(duration) * 1_000, 1)) ms"
}
