import Foundation
import Logging
import Testing
import Troupe
import TroupeCluster
import TroupeClusterMembership
import TroupeClusterEntities
import TroupeTestSupport
import TroupeVirtualActors

let secret = "correct horse battery staple"

/// One node of a test cluster, with its own actor system (as a separate process would have).
struct Node {
    let cluster: ClusterSystem
    let actors: ActorSystem

    func shutdown() async {
        await cluster.shutdown()
        await actors.shutdown()
    }
}

/// A node on loopback; SWIM patient enough for a loaded CI machine (nothing here tests
/// failure detection timing: a node that leaves says so, and is down at once). With a 3 s
/// suspicion, a node under ThreadSanitizer beside the stress suites was downed falsely, and a
/// downed node shuts its cluster down (CI rehearsal, 2026-11-28).
/// `logger`: the node's (its regions log through it); by default, the level from the
/// environment.
/// `transport`: the node's (TCP on loopback by default); the delayed-lines tests pass a
/// `FaultInjectingTransport`.
func startNode(
    seeds: [ClusterNode] = [], logger: Logger? = nil, transport: (any ClusterTransport)? = nil
) async throws -> Node {
    let actors = makeTestSystem(name: "node", workers: 1)
    var membership = ClusterMembershipSettings()
    membership.probeInterval = .seconds(1)
    membership.suspicionTimeout = .seconds(20)
    membership.downAfter = .seconds(30)
    let logger =
        logger
        ?? {
            var logger = Logger(label: "test")
            // TROUPE_TEST_LOG_LEVEL=warning shows what the regions log (a handoff timeout says
            // who it waited for).
            logger.logLevel =
                ProcessInfo.processInfo.environment["TROUPE_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) }
                ?? .critical
            return logger
        }()
    let settings = ClusterSettings(
        clusterName: "entities", port: 0, seeds: seeds.map { ($0.host, $0.port) }, secret: secret,
        callTimeout: StressScale.hangGuard(.seconds(10)), membership: membership, transport: transport,
        logger: logger)
    do {
        return Node(cluster: try await ClusterSystem(settings: settings, actorSystem: actors), actors: actors)
    } catch {
        await actors.shutdown()
        throw error
    }
}

/// `count` nodes joined through the first, each seeing all of them alive.
func startCluster(_ count: Int) async throws -> [Node] {
    let first = try await startNode()
    var nodes = [first]
    for _ in 1..<count { nodes.append(try await startNode(seeds: [first.cluster.node])) }
    await waitUntil(timeout: .seconds(60), "\(count) nodes see each other alive") {
        nodes.allSatisfy { $0.cluster.aliveMembers.count == count }
    }
    return nodes
}

/// Runs `body` on a cluster of `count` nodes, and shuts them down after, also on failure.
func withCluster(_ count: Int, _ body: ([Node]) async throws -> Void) async throws {
    let nodes = try await startCluster(count)
    do {
        try await body(nodes)
    } catch {
        for node in nodes { await node.shutdown() }
        throw error
    }
    for node in nodes { await node.shutdown() }
}

/// What every activation of a ``Ledger`` did, on whichever node: shared by the test, since
/// all the nodes are in this process.
final class LedgerLog: Sendable {
    struct Activation: Sendable, Hashable {
        let node: UInt64
        let key: String
    }
    let started = Recorder<Activation>()
    let stopped = Recorder<Activation>()
    /// Activations of one key alive at once, and the most ever seen.
    private let live = TestLock<(now: [String: Int], most: Int)>(([:], 0))

    func activationStarted(_ key: String, on node: UInt64) {
        started.append(.init(node: node, key: key))
        live.withLock { live in
            live.now[key, default: 0] += 1
            live.most = max(live.most, live.now[key]!)
        }
    }

    func activationStopped(_ key: String, on node: UInt64) {
        stopped.append(.init(node: node, key: key))
        live.withLock { $0.now[key, default: 0] -= 1 }
    }

    var mostConcurrentActivationsOfOneKey: Int { live.withLock { $0.most } }

    /// Appends handled, on any node, and those that came after a later one from the same
    /// sender to the same key (an order broken across activations).
    private let appends = TestLock<
        (handled: Int, last: [String: (sequence: Int, node: UInt64)], outOfOrder: Int, firstOutOfOrder: [String])
    >((0, [:], 0, []))

    func appended(_ key: String, sender: Int, sequence: Int, node: UInt64) {
        appends.withLock { appends in
            appends.handled += 1
            let stream = "\(key)/\(sender)"
            if let last = appends.last[stream], last.sequence >= sequence {
                appends.outOfOrder += 1
                if appends.firstOutOfOrder.count < 5 {
                    appends.firstOutOfOrder.append(
                        "\(stream): \(sequence) on \(node % 10_000) after \(last.sequence) on \(last.node % 10_000)")
                }
            }
            appends.last[stream] = (sequence, node)
        }
    }

    /// The first few appends that came after a later one (stream, then which node handled each).
    var firstAppendsOutOfOrder: [String] { appends.withLock { $0.firstOutOfOrder } }

    var appendsHandled: Int { appends.withLock { $0.handled } }
    var appendsOutOfOrder: Int { appends.withLock { $0.outOfOrder } }
}

/// An entity that keeps the entries it is sent, in order, and says on which node it runs.
struct Ledger: ActorDefinition {
    enum Message: Codable, Sendable {
        case append(sender: Int, sequence: Int)
        case entries(Reply<[Entry]>)
        case node(Reply<UInt64>)
        case dropYourReply(Reply<Int>)
        case fail(Reply<Int>)

        // A `Reply` does not travel: remote asks arrive as `EntityRequest`s and become these
        // cases on the entity's node. Only `append` is ever encoded.
        enum CodingKeys: String, CodingKey { case sender, sequence }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self = .append(
                sender: try container.decode(Int.self, forKey: .sender),
                sequence: try container.decode(Int.self, forKey: .sequence))
        }
        func encode(to encoder: any Encoder) throws {
            guard case .append(let sender, let sequence) = self else {
                throw EncodingError.invalidValue(
                    self, .init(codingPath: [], debugDescription: "only appends travel; ask with a request"))
            }
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(sender, forKey: .sender)
            try container.encode(sequence, forKey: .sequence)
        }
    }

    struct Entry: Codable, Sendable, Hashable {
        let sender: Int
        let sequence: Int
    }

    struct Refused: Error, CustomStringConvertible {
        var description: String { "refused on purpose" }
    }

    let key: String
    let node: UInt64
    let log: LedgerLog
    var entries: [Entry] = []

    func started(context: ActorContext<Message>) { log.activationStarted(key, on: node) }
    func stopped(context: ActorContext<Message>) { log.activationStopped(key, on: node) }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .append(let sender, let sequence):
            entries.append(Entry(sender: sender, sequence: sequence))
            log.appended(key, sender: sender, sequence: sequence, node: node)
        case .entries(let reply): reply.succeed(entries)
        case .node(let reply): reply.succeed(node)
        case .dropYourReply: break
        case .fail(let reply): reply.fail(Refused())
        }
    }
}

struct Entries: EntityRequest {
    func message(replyingTo reply: Reply<[Ledger.Entry]>) -> Ledger.Message { .entries(reply) }
}

struct WhichNode: EntityRequest {
    func message(replyingTo reply: Reply<UInt64>) -> Ledger.Message { .node(reply) }
}

struct Unanswered: EntityRequest {
    func message(replyingTo reply: Reply<Int>) -> Ledger.Message { .dropYourReply(reply) }
}

struct Refusal: EntityRequest {
    func message(replyingTo reply: Reply<Int>) -> Ledger.Message { .fail(reply) }
}

/// The ledger kind on `node`, logging to `log`.
func ledgers(
    on node: Node, log: LedgerLog, idleTimeout: Duration? = nil
) async throws
    -> ClusterEntityRegion<Ledger.Message>
{
    let uid = node.cluster.node.uid
    // The default handoff timeout (10 s), shorter than `awaitMembers`' 30 s: a start that
    // waits for a confirmation is ended by it (counted; the traffic tests check that none is).
    return try await ClusterEntityRegion(
        cluster: node.cluster,
        kind: EntityKind("ledger", idleTimeout: idleTimeout) { id in Ledger(key: id.key, node: uid, log: log) })
}

/// The ledger kind on every node, once each sees all of them as members.
func ledgersOnEveryNode(_ nodes: [Node], log: LedgerLog) async throws -> [ClusterEntityRegion<Ledger.Message>] {
    var regions: [ClusterEntityRegion<Ledger.Message>] = []
    for node in nodes { regions.append(try await ledgers(on: node, log: log)) }
    for region in regions { try await region.awaitMembers(nodes.count, timeout: .seconds(30)) }
    return regions
}
