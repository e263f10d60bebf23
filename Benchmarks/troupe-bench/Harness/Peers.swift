// `--peers`: the same workloads written for CAF (C++, Debian's libcaf-dev) and Erlang/OTP
// (Debian's erlang-base), under Benchmarks/peers/, built and run by Benchmarks/peers/run.sh
// at this run's sizes. Each peer program verifies its own results and prints them; the rows are
// verified again here (the count or answer against what it must be) and join the table.

import Foundation

/// The peers' system names in the table.
enum PeerSystem {
    static let caf = "CAF"
    static let erlang = "Erlang/OTP"
    static let all = [caf, erlang]

    /// What each peer's row measures, beside Troupe's form of the workload.
    static func note(_ system: String, _ workload: Workload) -> String {
        let form = system == caf ? "CAF 0.17 event-based actors, 2 scheduler threads" : "Erlang processes, +S 2:2"
        switch workload {
        case .counting: return "\(form); the window ends with an ask for the total (Troupe's: the N-th handled)"
        case .forkJoinCreation: return "\(form); each actor answers with a message (Troupe's: an atomic add)"
        case .fibonacci: return "\(form); replies carry the value and the subtree's actor count"
        case .memoryPerIdleActor:
            return system == caf
                ? "\(form); resident-set growth per idle actor"
                : "\(form); erlang:memory(processes) growth per idle process"
        default: return "\(form); one-way sends, as Troupe's tell"
        }
    }
}

/// The workloads the peers implement.
let peerWorkloads: [Workload] = [.pingPong, .counting, .threadRing, .forkJoinCreation, .fibonacci, .memoryPerIdleActor]

/// Runs Benchmarks/peers/run.sh for the selected peer rows and returns them as measurements;
/// a peer whose package is missing is skipped with a line on stderr.
func peerRows(_ config: BenchConfig) -> [Measurement] {
    let selected = peerWorkloads.filter { workload in PeerSystem.all.contains { config.includes(workload, system: $0) }
    }
    guard !selected.isEmpty else { return [] }
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("peers/run.sh").path
    guard FileManager.default.isExecutableFile(atPath: script) else {
        printError("troupe-bench: --peers needs \(script) (run from a checkout of the repository)")
        exit(1)
    }
    let sizes = selected.map { workload in
        let size = config.quick ? config.sizes[workload]!.quick : config.size(workload, .troupe)
        return "\(workload.rawValue)=\(size)"
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/bash")
    process.arguments = [script] + sizes
    let output = Pipe()
    process.standardOutput = output
    do { try process.run() } catch {
        printError("troupe-bench: could not start \(script): \(error)")
        exit(1)
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    verify(process.terminationStatus == 0, "peers: \(script) exited with status \(process.terminationStatus)")
    var rows: [Measurement] = []
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
        let fields = line.split(separator: " ").map(String.init)
        if fields.first == "version" || fields.first == "skip" {
            printError("peers: " + fields.dropFirst().joined(separator: " "))
            continue
        }
        guard fields.count == 7, fields[0] == "peer", let workload = Workload(rawValue: fields[2]),
            let units = Int(fields[3]), let seconds = Double(fields[4])
        else {
            verify(false, "peers: a line run.sh printed is not a row: \(line)")
            continue
        }
        let system = fields[1] == "CAF" ? PeerSystem.caf : PeerSystem.erlang
        guard config.includes(workload, system: system) else { continue }
        var row: Measurement
        if workload == .memoryPerIdleActor {
            guard let bytesPerActor = Int(fields[5]) else {
                verify(false, "peers: \(line): no bytes per actor")
                continue
            }
            row = Measurement(
                workload: workload, system: system, messages: units, seconds: 1, allocations: 0,
                note: PeerSystem.note(system, workload), heapBytes: bytesPerActor * units)
        } else {
            verify(
                fields[5] == fields[6],
                "peers: \(system) \(workload.rawValue) checked \(fields[5]), expected \(fields[6])")
            let size = config.quick ? config.sizes[workload]!.quick : config.size(workload, .troupe)
            // Fibonacci's units are the actors of fib(n)'s recursion tree; the others', the size.
            let expected = workload == .fibonacci ? fibonacciNodes(size) : size
            verify(
                units == expected, "peers: \(system) \(workload.rawValue) measured \(units) units, expected \(expected)"
            )
            verify(seconds > 0, "peers: \(system) \(workload.rawValue): a window of \(seconds) s")
            row = Measurement(
                workload: workload, system: system, messages: units, seconds: seconds, allocations: 0,
                note: PeerSystem.note(system, workload))
        }
        row.allocationsCounted = false
        rows.append(row)
    }
    return rows
}
