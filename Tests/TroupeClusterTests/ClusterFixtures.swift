import CoreMetrics
import Distributed
import Foundation
import Logging
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeCluster

let testSecret = "correct horse battery staple"

/// Shutdowns that `Greeter.shutDownItsNode()` saw finish.
let nodeShutdownsFinished = Atomic<Int>(0)

/// The calling thread's name (NIO names its event loops `NIO-ELT-…`, Troupe its workers
/// `<system>-w<n>`).
func currentThreadName() -> String {
    let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "unknown"
    return comm.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// SWIM fast enough for the tests about failure detection: a node that stops answering is
/// suspect after ~200 ms, unreachable ~600 ms later and down ~1 s after that. Other tests use
/// ``patientMembership()``: under ThreadSanitizer beside the stress suites, a node answering
/// 500 concurrent calls was downed falsely with these settings (CI).
func fastMembership() -> ClusterMembershipSettings {
    var settings = ClusterMembershipSettings()
    settings.probeInterval = .milliseconds(200)
    settings.pingTimeout = .milliseconds(80)
    settings.suspicionTimeout = .milliseconds(600)
    settings.downAfter = .seconds(1)
    return settings
}

/// One node of a test cluster, with its own actor system (as a separate process would have).
struct TestNode {
    let cluster: ClusterSystem
    let actors: ActorSystem

    func shutdown() async {
        await cluster.shutdown()
        await actors.shutdown()
    }
}

func startNode(
    seeds: [ClusterNode] = [], secret: String = testSecret, clusterName: String = "test",
    callTimeout: Duration = StressScale.hangGuard(.seconds(10)), port: Int = 0,
    transport: (any ClusterTransport)? = nil,
    maximumFrameSize: Int = 1 << 20, membership: ClusterMembershipSettings = patientMembership(),
    coder: any ClusterCoder = BinaryClusterCoder(), logger: Logger = quietLogger,
    metricsFactory: (any MetricsFactory)? = nil
) async throws -> TestNode {
    let actors = makeTestSystem(name: "node", workers: 1)
    let settings = ClusterSettings(
        clusterName: clusterName, port: port, seeds: seeds.map { ($0.host, $0.port) }, secret: secret,
        callTimeout: callTimeout, maximumFrameSize: maximumFrameSize, membership: membership, coder: coder,
        transport: transport, logger: logger, metricsFactory: metricsFactory)
    do {
        return TestNode(cluster: try await ClusterSystem(settings: settings, actorSystem: actors), actors: actors)
    } catch {
        await actors.shutdown()
        throw error
    }
}

/// `count` nodes joined through the first; returns once every node sees all of them alive.
func startCluster(_ count: Int) async throws -> [TestNode] {
    let first = try await startNode()
    var nodes = [first]
    for _ in 1..<count { nodes.append(try await startNode(seeds: [first.cluster.node])) }
    await waitUntil(timeout: .seconds(60), "\(count) nodes see each other alive") {
        nodes.allSatisfy { $0.cluster.aliveMembers.count == count }
    }
    return nodes
}

func shutdownAll(_ nodes: [TestNode]) async {
    for node in nodes { await node.shutdown() }
}

// MARK: Distributed actors used by the tests

struct Unencodable: Codable, Sendable {
    struct Refused: Error {}
    init() {}
    init(from decoder: any Decoder) throws { throw Refused() }
    func encode(to encoder: any Encoder) throws { throw Refused() }
}

/// A result whose instances are counted while alive.
final class CountedReply: Codable, Sendable {
    static let alive = Atomic<Int>(0)
    let value: Int
    init(value: Int) {
        self.value = value
        Self.alive.add(1, ordering: .relaxed)
    }
    required init(from decoder: any Decoder) throws {
        value = try decoder.singleValueContainer().decode(Int.self)
        Self.alive.add(1, ordering: .relaxed)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
    deinit { Self.alive.subtract(1, ordering: .relaxed) }
}

struct GreeterFailure: Error, CustomStringConvertible {
    let why: String
    var description: String { "greeter failure: \(why)" }
}

distributed actor Greeter: ClusterActor {
    var greeted: [String] = []

    distributed func greet(_ name: String) -> String {
        greeted.append(name)
        return "Hello, \(name)!"
    }

    distributed func record(_ name: String) {
        greeted.append(name)
    }

    distributed func names() -> [String] { greeted }

    distributed func fail(_ why: String) throws -> Int {
        throw GreeterFailure(why: why)
    }

    distributed func slow(_ duration: Duration) async -> Int {
        try? await Task.sleep(for: duration)
        return 1
    }

    /// Shuts its own node down from inside a call (which may run on the node's event loop), then
    /// counts the shutdown as finished.
    distributed func shutDownItsNode() async -> Bool {
        await actorSystem.shutdown()
        nodeShutdownsFinished.add(1, ordering: .relaxed)
        return true
    }

    distributed func take(_ value: Unencodable) -> Int { 0 }

    distributed func give() -> Unencodable { Unencodable() }

    distributed func echo(_ bytes: [UInt8]) -> [UInt8] { bytes }

    distributed func bytes(_ count: Int) -> [UInt8] { [UInt8](repeating: 3, count: count) }

    /// A generic target: the runtime needs each call's substitutions.
    distributed func describe<Value: Codable & Sendable>(_ value: Value) -> String { "\(Value.self): \(value)" }

    /// A reference-typed result, counted while alive: a result moved out of the runtime's
    /// buffer exactly once leaves none behind (and frees none twice).
    distributed func counted(_ value: Int) -> CountedReply { CountedReply(value: value) }

    /// Calls `other` (another node's greeter) from here: references travel as arguments.
    distributed func relay(to other: Greeter, name: String) async throws -> String {
        try await other.greet(name)
    }

    /// The name of the thread this call runs on.
    distributed func threadName() -> String { currentThreadName() }

    /// Whether this call runs on the actor's Troupe executor.
    distributed func runsOnTroupe() -> Bool {
        guard let executor = id.executor else { return false }
        return executor.isIsolatingCurrentContext() == true
    }
}

/// A distributed actor that does not opt into Troupe's executors.
distributed actor PlainCounter {
    typealias ActorSystem = ClusterSystem
    var count = 0
    distributed func increment() -> Int {
        count += 1
        return count
    }
}

extension ReceptionKey where Act == Greeter {
    static var greeters: ReceptionKey<Greeter> { ReceptionKey(id: "greeters") }
}

extension ClusterSystem {
    /// This node's address, as a seed for others.
    var address: (host: String, port: Int) { (node.host, node.port) }
}
