import Foundation
import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeCluster
@testable import troupe_cluster_node

/// A `troupe-cluster-node` child process and the lines it printed.
final class NodeProcess: Sendable {
    let process: Process
    let lines = TestLock<[String]>([])
    /// What it wrote on stderr (its log), line by line.
    let errorLines = TestLock<[String]>([])
    let exitStatus = TestLock<Int32?>(nil)

    static var binary: URL {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("troupe-cluster-node")
    }

    /// A node on `host`:`port` joining through `seed`, in network namespace `namespace` if
    /// given (through `ip netns exec`, which runs the node in its own process).
    init(
        host: String = "127.0.0.1", port: Int = 0, seed: (host: String, port: Int)?, namespace: String? = nil,
        extraArguments: [String] = []
    ) throws {
        process = Process()
        var arguments = [
            "--host", host, "--port", "\(port)", "--secret", testSecret,
            "--probe-ms", "200", "--suspicion-ms", "600", "--down-ms", "1000",
        ]
        if let seed { arguments += ["--seed", "\(seed.host):\(seed.port)"] }
        arguments += extraArguments
        if let namespace {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", namespace, Self.binary.path] + arguments
        } else {
            process.executableURL = Self.binary
            process.arguments = arguments
        }
        // Under the sanitizers, the child's exit status is what the tests read: its own leak
        // check at exit (of globals alive until exit) would replace it. In-process tests cover
        // the same code for leaks.
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = "detect_leaks=0"
        process.environment = environment
        let pipe = Pipe()
        let errorPipe = Pipe()
        process.standardOutput = pipe
        process.standardError = errorPipe
        Self.collectLines(from: pipe, into: lines)
        Self.collectLines(from: errorPipe, into: errorLines)
        let exitStatus = self.exitStatus
        process.terminationHandler = { process in exitStatus.withLock { $0 = process.terminationStatus } }
        try process.run()
    }

    private static func collectLines(from pipe: Pipe, into lines: TestLock<[String]>) {
        let buffer = TestLock(Data())
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            let complete = buffer.withLock { data -> [String] in
                data.append(chunk)
                var found: [String] = []
                while let newline = data.firstIndex(of: UInt8(ascii: "\n")) {
                    found.append(String(decoding: data[data.startIndex..<newline], as: UTF8.self))
                    data.removeSubrange(data.startIndex...newline)
                }
                return found
            }
            if !complete.isEmpty { lines.withLock { $0 += complete } }
            if chunk.isEmpty { handle.readabilityHandler = nil }
        }
    }

    /// The node's identity, from its READY line.
    func node() async -> ClusterNode? {
        await waitUntil(timeout: .seconds(60), "READY") { lines.withLock { $0.contains { $0.hasPrefix("READY ") } } }
        guard let line = lines.withLock({ $0.first { $0.hasPrefix("READY ") } }) else { return nil }
        return parseNode(String(line.dropFirst(6)))
    }

    /// Whether it printed that `member` has `status` (the status's text, e.g. "down").
    func saw(_ member: ClusterNode, _ status: String) -> Bool {
        lines.withLock { $0.contains { $0.hasPrefix("MEMBER \(member) \(status)") } }
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    func stop() {
        if process.isRunning { signal(SIGKILL) }
        process.waitUntilExit()
    }
}

func parseNode(_ text: String) -> ClusterNode? {
    let hostPort = text.split(separator: "#")
    guard hostPort.count == 2, let uid = UInt64(hostPort[1]) else { return nil }
    let parts = hostPort[0].split(separator: ":")
    guard parts.count == 2, let port = Int(parts[1]) else { return nil }
    return ClusterNode(host: String(parts[0]), port: port, uid: uid)
}

@Suite("Nodes in separate processes: kill -9, SIGSTOP/SIGCONT, restart on the same port", .serialized)
struct MultiProcessTests {
    @Test func aKilledNodeIsDownEverywhereAndARestartOnItsPortJoinsAsANewNode() async throws {
        let observer = try await startNode(clusterName: "troupe")
        let first = try NodeProcess(seed: observer.cluster.address)
        let second = try NodeProcess(seed: observer.cluster.address)
        defer {
            first.stop()
            second.stop()
        }
        let firstNode = try #require(await first.node())
        let secondNode = try #require(await second.node())
        await waitUntil(timeout: .seconds(60), "three nodes alive everywhere") {
            observer.cluster.aliveMembers.count == 3 && first.saw(secondNode, "alive")
        }
        // Both echo actors answer through the receptionist.
        await waitUntil(timeout: .seconds(60), "both echoes listed") {
            observer.cluster.receptionist.lookup(echoKey).count == 2
        }
        var answered: Set<String> = []
        for echo in observer.cluster.receptionist.lookup(echoKey) {
            #expect(try await echo.echo([1, 2, 3]) == [1, 2, 3])
            answered.insert(try await echo.whereAreYou())
        }
        #expect(answered == ["\(firstNode)", "\(secondNode)"])

        second.signal(SIGKILL)
        await waitUntil(timeout: .seconds(60), "the killed node is down everywhere") {
            observer.cluster.membership[secondNode] == .down && first.saw(secondNode, "down")
        }
        #expect(first.saw(secondNode, "unreachable"))
        await waitUntil(timeout: .seconds(60), "its echo unlisted") {
            observer.cluster.receptionist.lookup(echoKey).count == 1
        }

        let restarted = try NodeProcess(port: secondNode.port, seed: observer.cluster.address)
        defer { restarted.stop() }
        let restartedNode = try #require(await restarted.node())
        #expect(restartedNode.port == secondNode.port && restartedNode.uid != secondNode.uid)
        await waitUntil(timeout: .seconds(60), "the new run is alive everywhere") {
            observer.cluster.aliveMembers.contains(restartedNode) && first.saw(restartedNode, "alive")
        }
        #expect(observer.cluster.membership[secondNode] == .down)

        first.signal(SIGTERM)
        await waitUntil(timeout: .seconds(60), "a clean exit on SIGTERM") { first.exitStatus.withLock { $0 } == 0 }
        await waitUntil(timeout: .seconds(60), "its leaving seen") { observer.cluster.membership[firstNode] == .down }
        await observer.shutdown()
    }

    @Test func aStoppedNodeIsDownAndOnResumeLearnsItWasRemoved() async throws {
        // The node's own timings (its flags: probes every 200 ms, down about 1.6 s after the
        // last answer), so the test waits seconds for the down, not the 50 s of the patient ones.
        let observer = try await startNode(clusterName: "troupe", membership: fastMembership())
        let paused = try NodeProcess(seed: observer.cluster.address)
        defer { paused.stop() }
        let pausedNode = try #require(await paused.node())
        await waitUntil(timeout: .seconds(60), "joined") { observer.cluster.aliveMembers.contains(pausedNode) }

        paused.signal(SIGSTOP)
        await waitUntil(timeout: .seconds(60), "the stopped node is down") {
            observer.cluster.membership[pausedNode] == .down
        }
        #expect(observer.cluster.membership[pausedNode] == .down)
        paused.signal(SIGCONT)
        await waitUntil(timeout: .seconds(60), "the resumed node learns it was removed and exits") {
            paused.exitStatus.withLock { $0 } == 3
        }
        #expect(paused.lines.withLock { $0.contains("REMOVED") })
        #expect(paused.saw(pausedNode, "down"))
        await observer.shutdown()
    }

    @Test func badOptionsExitWithUsage() throws {
        let process = Process()
        process.executableURL = NodeProcess.binary
        process.arguments = ["--port", "99999", "--secret", testSecret]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 64)
        #expect(throws: NodeOptions.Invalid.self) { try NodeOptions(arguments: ["--seed", "nocolon"]) }
        #expect(throws: NodeOptions.Invalid.self) { try NodeOptions(arguments: ["--port", "1"]) }  // no secret
        #expect(throws: NodeOptions.Invalid.self) { try NodeOptions(arguments: ["--secret", "s", "--probe-ms", "0"]) }
    }
}
