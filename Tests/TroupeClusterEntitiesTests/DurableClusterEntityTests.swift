import Synchronization
import Testing
import Troupe
import TroupeCluster
import TroupeClusterEntities
import TroupePersistence
import TroupeTestSupport
import TroupeVirtualActors

/// Durable actors of TroupePersistence as the entities of a cluster region: the nodes share one
/// store (as they would share PostgreSQL), each with its own journal on it.
@Suite("Durable entities on a cluster", .serialized)
struct DurableClusterEntityTests {
    /// An identity that moves to a node that joins starts there with the state its old home
    /// stored; commands reach it encoded (the message is `Codable` because its command is).
    @Test func aDurableEntitysStateFollowsItsIdentityToItsNewHome() async throws {
        let store = InMemoryStore()
        let journals = [Journal(store: store), Journal(store: store)]
        try await withCluster(2) { nodes in
            let old = try await accounts(on: nodes[1], journal: journals[1])
            try await old.awaitMembers(1, timeout: .seconds(30))
            let keys = (0..<20).map { "account-\($0)" }
            for (index, key) in keys.enumerated() {
                #expect(old.entity(key).tell(.command(.deposit(index + 1))) == .enqueued)
            }
            for (index, key) in keys.enumerated() { #expect(try await old.entity(key).ask(Balance()) == index + 1) }

            let new = try await accounts(on: nodes[0], journal: journals[0])
            try await new.awaitMembers(2, timeout: .seconds(30))
            try await old.awaitMembers(2, timeout: .seconds(30))
            let moved = keys.filter { new.owner(of: $0) == nodes[0].cluster.node }
            #expect(!moved.isEmpty && moved.count < keys.count, "some identities moved, not all: \(moved)")
            for key in keys { #expect(new.entity(key).tell(.command(.deposit(100))) == .enqueued) }
            for (index, key) in keys.enumerated() {
                #expect(try await new.entity(key).ask(Balance()) == index + 101, "\(key)")
            }
            #expect(new.local.statistics.activations == moved.count, "the moved ones activated on their new home")
            #expect(new.statistics.sentToOtherNodes > 0, "the others' deposits were encoded and sent")
            #expect(new.statistics.undeliverable + old.statistics.undeliverable == 0)

            // Each node reports its own journal's lag (the two nodes' systems are apart).
            let loads = await new.loadByNode()
            #expect(loads.count == 2)
            for (node, journal) in zip(nodes, journals) {
                let lag = try #require(loads.first { $0.node == node.cluster.node }?.journalLag, "\(loads)")
                #expect(lag.journals == 1 && lag.queuedOperations == 0, "\(node.cluster.node): \(lag)")
                #expect(lag.operations == journal.statistics.operations && lag.operations > 0)
                #expect(lag.writeLatencyP99 != nil)
            }
        }
        for journal in journals { await journal.shutdown() }
    }

    /// Two activations of one identity at once, which the handoff allows once a member has not
    /// confirmed within `handoffTimeout` (here the old home's activation is stuck in a handler):
    /// the newer activation claims the identity's writer, so the old one's write after that is
    /// refused by the store and nothing of it is kept.
    @Test func ofTwoActivationsAfterAHandoffTimeoutOnlyTheNewerWrites() async throws {
        let store = FenceCountingStore()
        let journals = [Journal(store: store), Journal(store: store)]
        let gate = Gate()
        try await withCluster(2) { nodes in
            defer { gate.open() }  // never leave a worker blocked behind a failed expectation
            // Which identity will move to the first node once both hold the kind: placement
            // depends on the key and the members only, so another kind tells.
            let probes = try await [nodes[0], nodes[1]].asyncMap { node in
                try await ClusterEntityRegion(
                    cluster: node.cluster, kind: EntityKind("probe") { _ in Blocker(gate: gate) })
            }
            try await probes[0].awaitMembers(2, timeout: .seconds(30))
            let key = try #require(
                (0..<100).map { "account-\($0)" }.first { probes[0].owner(of: $0) == nodes[0].cluster.node })

            let old = try await accounts(on: nodes[1], journal: journals[1])
            try await old.awaitMembers(1, timeout: .seconds(30))
            #expect(old.entity(key).tell(.command(.deposit(10))) == .enqueued)
            // Answered once the deposit is written: what follows is not stashed behind a write in
            // flight (a stop requested meanwhile would drop the stash, not run it).
            #expect(try await old.entity(key).ask(Balance()) == 10)
            // Stuck in a handler, with a deposit queued behind it: this activation writes again
            // only after the other node's has claimed the writer.
            old.local.entity(key).tell(.command(.hold(gate)))
            old.local.entity(key).tell(.command(.deposit(1_000)))

            let new = try await accounts(on: nodes[0], journal: journals[0], handoffTimeout: .milliseconds(300))
            #expect(new.owner(of: key) == nodes[0].cluster.node)
            await waitUntil("the new home gave up waiting for the old one") { new.statistics.handoffTimeouts >= 1 }
            // A second activation, on the new home: it recovers the 10 and claims the writer.
            #expect(try await new.entity(key).ask(Balance()) == 10)
            #expect(new.entity(key).tell(.command(.deposit(1))) == .enqueued)
            #expect(try await new.entity(key).ask(Balance()) == 11)
            #expect(store.fenced.load(ordering: .relaxed) == 0)
            gate.open()
            // The old activation handles its deposit and writes it with the epoch it claimed.
            await waitUntil("the store refused the old activation's write") {
                store.fenced.load(ordering: .relaxed) == 1
            }
            await waitUntil("the old home's activation stopped") { old.local.statistics.active == 0 }
            let stored = try await store.history(of: PersistenceID(EntityID(kind: "account", key: key).description))
            #expect(stored.events.count == 2, "the 10 and the 1, not the 1,000")
            // What the store kept: a fresh activation recovers 11; the 1,000 was refused.
            #expect(new.local.passivateAll() == 1)
            await waitUntil("the new home's activation stopped") { new.local.statistics.active == 0 }
            #expect(try await new.entity(key).ask(Balance()) == 11)
            #expect(try await old.entity(key).ask(Balance()) == 11, "asked from the old home, answered by the new")
        }
        for journal in journals { await journal.shutdown() }
    }
}

/// One store for both nodes' journals, counting the writes it refused because an activation
/// elsewhere had claimed the identity's writer since the writer's own claim.
final class FenceCountingStore: PersistenceStore {
    let base = InMemoryStore()
    let fenced = Atomic<Int>(0)

    func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        let outcomes = try await base.commit(operations)
        let refused = outcomes.count {
            guard case .fenced = $0 else { return false }
            return true
        }
        fenced.add(refused, ordering: .relaxed)
        return outcomes
    }
    func history(of id: PersistenceID) async throws -> StoredHistory { try await base.history(of: id) }
    func durableState(of id: PersistenceID) async throws -> StoredState? { try await base.durableState(of: id) }
    func storedEventVersions() async throws -> Set<StoredTypeVersion> { try await base.storedEventVersions() }
}

/// A durable balance whose deposits travel between nodes.
struct Account: EventSourcedActor {
    enum Command: Codable, Sendable {
        case deposit(Int)
        case balance(Reply<Int>)
        /// Blocks the handler (and its worker) until the gate opens: local only.
        case hold(Gate)

        // Only deposits travel: asks arrive as `EntityRequest`s and become `balance` on the
        // entity's node.
        init(from decoder: any Decoder) throws { self = .deposit(try Int(from: decoder)) }
        func encode(to encoder: any Encoder) throws {
            guard case .deposit(let amount) = self else {
                throw EncodingError.invalidValue(
                    "\(self)", .init(codingPath: [], debugDescription: "only deposits travel; ask with a request"))
            }
            try amount.encode(to: encoder)
        }
    }
    /// The balance is the sum of the deposits stored.
    struct Deposited: Codable, Sendable { let amount: Int }
    typealias Event = Deposited
    typealias State = Int

    let persistenceID: PersistenceID
    var emptyState: Int { 0 }
    static let eventCodec = PersistenceCodec<Deposited>.json(typeName: "account-deposit")

    func handle(_ command: Command, state balance: Int, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .deposit(let amount): return .persist(Deposited(amount: amount))
        case .balance(let reply): return .reply(reply, balance)
        case .hold(let gate):
            gate.pass()
            return .none
        }
    }

    func apply(_ event: Deposited, to balance: inout Int) { balance += event.amount }
}

struct Balance: EntityRequest {
    func message(replyingTo reply: Reply<Int>) -> PersistentMessage<Account.Command> { .command(.balance(reply)) }
}

func accounts(
    on node: Node, journal: Journal, handoffTimeout: Duration = .seconds(10)
) async throws -> ClusterEntityRegion<PersistentMessage<Account.Command>> {
    let system = node.actors
    return try await ClusterEntityRegion(
        cluster: node.cluster, name: "account", idleTimeout: nil, handoffTimeout: handoffTimeout
    ) { id in
        system.spawn(persistent: Account(persistenceID: PersistenceID(id.description)), journal: journal).actorRef
    }
}

extension Array {
    func asyncMap<Result>(_ transform: (Element) async throws -> Result) async rethrows -> [Result] {
        var results: [Result] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
