import Foundation
import Testing
import Troupe
import TroupePersistence
import TroupePersistenceSQLite
import TroupeTestSupport
import TroupeVirtualActors

/// Entities whose state is a durable actor of TroupePersistence: every activation recovers what
/// the previous ones stored, and claims the identity's writer anew, so that of two activations
/// of one identity (two nodes whose directories disagree) only the newer can write.
@Suite struct DurableEntityTests {
    @Test(arguments: [false, true]) func aDurableEntityRecoversItsStateOnEveryActivation(onSQLite: Bool) async throws {
        let directory = onSQLite ? temporaryDirectory() : nil
        let store: any PersistenceStore =
            if let directory { try await SQLiteStore.open(path: directory + "/events.sqlite") } else { InMemoryStore() }
        let journal = Journal(store: store)
        try await withTestSystem { system in
            let ledgers = try ledgerRegion(system, journal: journal)
            let ledger = ledgers.entity("42")
            #expect(try await ledger.ask { .command(.deposit(10, $0)) } == 10)
            #expect(try await ledger.ask { .command(.deposit(5, $0)) } == 15)
            #expect(ledgers.passivateAll() == 1)
            await waitUntil("the activation stopped") { ledgers.statistics.active == 0 }
            #expect(try await ledger.ask { .command(.balance($0)) } == 15)
            #expect(try await ledger.ask { .command(.deposit(1, $0)) } == 16)
            #expect(ledgers.statistics.activations == 2)
        }
        await journal.shutdown()
        if let sqlite = store as? SQLiteStore { try await sqlite.close() }
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Two systems share one store, as two nodes would; each has a region of the kind, and each
    /// activates the same identity (what a split directory would do). The later activation
    /// claims the writer, so the earlier one's next write is refused and stores nothing; when
    /// the earlier node's next message activates the entity again, it recovers every write
    /// that was accepted and fences the other in turn.
    @Test func ofTwoActivationsOfOneIdentityOnlyTheNewerCanWrite() async throws {
        let store = InMemoryStore()
        let (journalA, journalB) = (Journal(store: store), Journal(store: store))
        let (nodeA, nodeB) = (makeTestSystem(name: "node-a"), makeTestSystem(name: "node-b"))
        let onA = try ledgerRegion(nodeA, journal: journalA).entity("7")
        let regionB = try ledgerRegion(nodeB, journal: journalB)
        let onB = regionB.entity("7")

        #expect(try await onA.ask { .command(.deposit(10, $0)) } == 10)
        #expect(try await onB.ask { .command(.deposit(1, $0)) } == 11)  // recovered A's write, then claimed
        let refused = await askFailure { try await onA.ask { .command(.deposit(100, $0)) } }
        #expect(isFenced(refused), "A's write after B's claim: \(String(describing: refused))")
        #expect(try await onA.ask { .command(.balance($0)) } == 11)  // a new activation; 100 was never stored
        let refusedB = await askFailure { try await onB.ask { .command(.deposit(1_000, $0)) } }
        #expect(isFenced(refusedB), "B's write after A's new claim: \(String(describing: refusedB))")
        #expect(try await onB.ask { .command(.balance($0)) } == 11)
        #expect(regionB.statistics.activations == 2)

        await nodeA.shutdown()
        await nodeB.shutdown()
        await journalA.shutdown()
        await journalB.shutdown()
    }
}

/// A durable balance.
struct Ledger: EventSourcedActor {
    enum Command: Sendable {
        case deposit(Int, Reply<Int>)
        case balance(Reply<Int>)
    }
    enum Event: Codable, Sendable { case deposited(Int) }
    struct State: Codable, Sendable { var balance = 0 }

    let persistenceID: PersistenceID
    var emptyState: State { State() }
    static let eventCodec = PersistenceCodec<Event>.json(typeName: "ledger-event")

    func handle(_ command: Command, state: State, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .deposit(let amount, let reply): .persist(.deposited(amount)).thenReply(reply) { $0.balance }
        case .balance(let reply): .reply(reply, state.balance)
        }
    }

    func apply(_ event: Event, to state: inout State) {
        switch event {
        case .deposited(let amount): state.balance += amount
        }
    }
}

func ledgerRegion(_ system: ActorSystem, journal: Journal) throws -> EntityRegion<PersistentMessage<Ledger.Command>> {
    try EntityRegion(system: system, name: "ledger", idleTimeout: nil) { id in
        system.spawn(persistent: Ledger(persistenceID: PersistenceID(id.description)), journal: journal).actorRef
    }
}

func askFailure<Value>(_ body: () async throws -> Value) async -> AskError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error as? AskError
    }
}

func isFenced(_ error: AskError?) -> Bool {
    guard let error, case .fenced = error.rootCause as? PersistenceError else { return false }
    return true
}

func temporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("troupe-entities-\(UUID().uuidString)")
        .path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
