// The rows that need separate processes: `troupe-cluster-node` started N times, killed with
// SIGKILL or frozen with SIGSTOP; failure detection, join and convergence times, and false
// downs under CPU saturation. Times come from CLOCK_MONOTONIC, which every process on the
// machine shares: a node prints the instant it saw each change, the bench the instant it acted.

import CBenchSupport
import Foundation
import Histogram
import Synchronization

/// SWIM timing of every process row: probe every 500 ms (ping timeout 200 ms), suspect for
/// 1.5 s before unreachable, unreachable for 2 s before down.
let processTiming = ["--probe-ms", "500", "--suspicion-ms", "1500", "--down-ms", "2000"]

/// One `troupe-cluster-node` and what it printed.
final class BenchNode: Sendable {
    let process: Process
    /// A lock-protected value a closure can capture (a `Mutex` cannot be).
    final class Shared<Value>: Sendable {
        let value: Mutex<Value>
        init(_ value: sending Value) { self.value = Mutex(value) }
        func withLock<R>(_ body: (inout sending Value) -> sending R) -> sending R { value.withLock(body) }
    }
    private let lines = Shared<[String]>([])

    init(binary: String, seed: (host: String, port: Int)?) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        var arguments = ["--secret", benchSecret] + processTiming
        if let seed { arguments += ["--seed", "\(seed.host):\(seed.port)"] }
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let partial = Shared(Data())
        let lines = self.lines
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            if chunk.isEmpty { handle.readabilityHandler = nil }
            let complete = partial.withLock { data -> [String] in
                data.append(chunk)
                var found: [String] = []
                while let newline = data.firstIndex(of: UInt8(ascii: "\n")) {
                    found.append(String(decoding: data[data.startIndex..<newline], as: UTF8.self))
                    data.removeSubrange(data.startIndex...newline)
                }
                return found
            }
            if !complete.isEmpty { lines.withLock { $0 += complete } }
        }
        try process.run()
    }

    /// "host:port#uid", once READY was printed.
    var node: String? {
        lines.withLock { $0.first { $0.hasPrefix("READY ") }.map { String($0.dropFirst(6)) } }
    }

    var address: (host: String, port: Int)? {
        guard let node, let hostPort = node.split(separator: "#").first else { return nil }
        let parts = hostPort.split(separator: ":")
        guard parts.count == 2, let port = Int(parts[1]) else { return nil }
        return (String(parts[0]), port)
    }

    /// When this node saw `member` reach a status starting with `status`, if it did.
    func sawAt(_ member: String, _ status: String) -> UInt64? {
        lines.withLock { lines in
            for line in lines where line.hasPrefix("MEMBER \(member) \(status)") {
                if let stamp = line.split(separator: " ").last.flatMap({ UInt64($0) }) { return stamp }
            }
            return nil
        }
    }

    /// Lines reporting a member in `status` (e.g. "down").
    func count(_ status: String) -> Int {
        lines.withLock { $0.filter { $0.hasPrefix("MEMBER ") && $0.split(separator: " ")[2].hasPrefix(status) }.count }
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    func stop() {
        if process.isRunning { signal(SIGKILL) }
        process.waitUntilExit()
    }
}

/// Polls `condition` every 2 ms until it holds; fails the run after `seconds`.
func waitFor(_ what: String, seconds: Double = 60, _ condition: () -> Bool) async {
    let deadline = CBenchSupport_now_ns() + UInt64(seconds * 1e9)
    while !condition() {
        if CBenchSupport_now_ns() > deadline {
            printError("troupe-bench: WRONG RESULT: \(what) did not happen within \(Int(seconds)) s")
            exit(1)
        }
        try? await Task.sleep(for: .milliseconds(2))
    }
}

func startNodes(_ binary: String, count: Int) async throws -> [BenchNode] {
    let seed = try BenchNode(binary: binary, seed: nil)
    await waitFor("the seed's READY") { seed.address != nil }
    var nodes = [seed]
    for _ in 1..<count { nodes.append(try BenchNode(binary: binary, seed: seed.address!)) }
    await waitFor("every node's READY") { nodes.allSatisfy { $0.node != nil } }
    return nodes
}

func everyoneSeesEveryone(_ nodes: [BenchNode]) -> Bool {
    let names = nodes.compactMap(\.node)
    return names.count == nodes.count
        && nodes.allSatisfy { node in names.allSatisfy { node.sawAt($0, "alive") != nil } }
}

/// Detection: per trial a fresh victim joins two stable nodes, is killed (or frozen), and the
/// time until both stable nodes report it unreachable, then down, is the slower of the two.
func detectionRows(_ options: ClusterBenchOptions, binary: String) async throws -> [ClusterRow] {
    var rows: [ClusterRow] = []
    let stable = try await startNodes(binary, count: 2)
    defer { for node in stable { node.stop() } }
    for (signal, label) in [(SIGKILL, "kill -9"), (SIGSTOP, "SIGSTOP")] {
        clusterProgress("failure detection after \(label), \(options.trials) trials")
        var unreachable = makeLatencyHistogram()
        var down = makeLatencyHistogram()
        for _ in 0..<options.trials {
            let victim = try BenchNode(binary: binary, seed: stable[0].address!)
            await waitFor("the victim's READY") { victim.node != nil }
            let name = victim.node!
            await waitFor("the victim joined") {
                everyoneSeesEveryone(stable + [victim])
            }
            let sentAt = CBenchSupport_now_ns()
            victim.signal(signal)
            await waitFor("both stable nodes saw the victim down") {
                stable.allSatisfy { $0.sawAt(name, "down") != nil }
            }
            unreachable.record(
                stable.map { ($0.sawAt(name, "unreachable") ?? $0.sawAt(name, "down")!) &- sentAt }.max()!)
            down.record(stable.map { $0.sawAt(name, "down")! &- sentAt }.max()!)
            victim.stop()
        }
        var seenUnreachable = ClusterRow(
            section: .detection, name: "\(label): every node sees it unreachable",
            note: "\(options.trials) trials; the slower of two observers", histogram: unreachable)
        if signal == SIGKILL { seenUnreachable.target = .maxAtMost(.seconds(2)) }
        rows.append(seenUnreachable)
        rows.append(
            ClusterRow(
                section: .detection, name: "\(label): every node sees it down",
                note: "\(options.trials) trials; unreachable + 2 s downing", histogram: down))
    }
    return rows
}

/// Join and convergence: N nodes started at once through one seed; join is until the seed
/// sees the last joiner alive, convergence until every node sees every node alive.
func convergenceRows(_ options: ClusterBenchOptions, binary: String) async throws -> [ClusterRow] {
    var rows: [ClusterRow] = []
    for count in [3, 5] {
        clusterProgress("join and convergence, \(count) nodes, \(options.convergenceTrials) trials")
        var join = makeLatencyHistogram()
        var convergence = makeLatencyHistogram()
        for _ in 0..<options.convergenceTrials {
            let seed = try BenchNode(binary: binary, seed: nil)
            await waitFor("the seed's READY") { seed.address != nil }
            let startedAt = CBenchSupport_now_ns()
            var nodes = [seed]
            for _ in 1..<count { nodes.append(try BenchNode(binary: binary, seed: seed.address!)) }
            await waitFor("\(count) nodes converged") { everyoneSeesEveryone(nodes) }
            let names = nodes.compactMap(\.node)
            join.record(names.dropFirst().map { seed.sawAt($0, "alive")! &- startedAt }.max()!)
            // Each node's view of the others (its own "alive" line comes at its start).
            convergence.record(
                nodes.flatMap { node in
                    names.filter { $0 != node.node }.map { node.sawAt($0, "alive")! &- startedAt }
                }.max()!)
            for node in nodes { node.stop() }
        }
        rows.append(
            ClusterRow(
                section: .membership, name: "Join, \(count) nodes", note: "from starting the joiners",
                histogram: join))
        var row = ClusterRow(
            section: .membership, name: "Convergence, \(count) nodes",
            note: "until every node sees every node alive (joins pushed to every member)", histogram: convergence)
        if count == 5 { row.target = .maxAtMost(.milliseconds(200)) }
        rows.append(row)
    }
    return rows
}

/// No false downs: three nodes for `soakSeconds` while two spinning threads keep both cores busy.
func soakRow(_ options: ClusterBenchOptions, binary: String) async throws -> ClusterRow {
    clusterProgress("false downs: 3 nodes for \(options.soakSeconds) s with both cores saturated")
    let nodes = try await startNodes(binary, count: 3)
    defer { for node in nodes { node.stop() } }
    await waitFor("3 nodes converged") { everyoneSeesEveryone(nodes) }
    // Burners are processes of their own: spinning threads in this process would also starve
    // libdispatch's worker pool here (it adds no worker while this process's threads are
    // runnable on every core), and with it this task's timer.
    let burners = try (0..<2).map { _ in
        let burner = Process()
        burner.executableURL = URL(fileURLWithPath: "/bin/sh")
        burner.arguments = ["-c", "while :; do :; done"]
        try burner.run()
        return burner
    }
    try await Task.sleep(for: .seconds(options.soakSeconds))
    for burner in burners {
        // SIGKILL: a shell busy in a loop of builtins acts on SIGTERM only between commands.
        kill(burner.processIdentifier, SIGKILL)
        burner.waitUntilExit()
    }
    let downs = nodes.map { $0.count("down") }.reduce(0, +)
    let suspicions = nodes.map { $0.count("suspect") + $0.count("unreachable") }.reduce(0, +)
    var row = ClusterRow(
        section: .membership, name: "False downs, 3 nodes, \(options.soakSeconds) s, both cores saturated",
        note: "\(suspicions) suspicion or unreachable reports (later refuted)")
    row.count = downs
    row.target = .countAtMost(0)
    return row
}
