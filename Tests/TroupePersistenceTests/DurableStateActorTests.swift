import Testing
import Troupe
import TroupePersistence
import TroupeTestSupport

struct Cart: DurableStateActor {
    enum Command: Sendable {
        case add(String, Reply<Int>)
        case items(Reply<[String]>)
        case revision(Reply<Int64>)
    }
    let persistenceID: PersistenceID
    var emptyState: [String] { [] }
    static let stateCodec = PersistenceCodec<[String]>.json(typeName: "cart")

    func handle(_ command: Command, state: [String], context: DurableStateContext<Self>) -> StateEffect<Self> {
        switch command {
        case .add(let item, let reply): .save(state + [item]).thenReply(reply) { $0.count }
        case .items(let reply): .reply(reply, state)
        case .revision(let reply): .reply(reply, context.revision)
        }
    }
}

/// Durable-state actors on every store: saves answered once stored, read back at spawn,
/// compare-and-set on the revision, fencing.
@Suite struct DurableStateActorTests {
    @Test(arguments: StoreKind.available) func theStateIsReadBackAtSpawnWithItsRevision(kind: StoreKind) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let cart = system.spawn(persistent: Cart(persistenceID: "cart-1"), journal: journal)
            #expect(try await cart.ask { .add("apple", $0) } == 1)
            #expect(try await cart.ask { .add("pear", $0) } == 2)
            cart.stop()
            _ = await cart.terminated()
            let again = system.spawn(persistent: Cart(persistenceID: "cart-1"), journal: journal)
            #expect(try await again.ask { .items($0) } == ["apple", "pear"])
            #expect(try await again.ask { .revision($0) } == 2)
            #expect(try await store.durableState(of: "cart-1")?.revision == 2)
        }
    }

    @Test(arguments: StoreKind.available) func aSaveOverAStaleRevisionIsRefusedNamingBoth(kind: StoreKind) async throws
    {
        let test = try await kind.make()
        let store = test.store
        let state = SerializedEvent(typeName: "cart", version: 1, payload: Array("[]".utf8))
        _ = try await store.commit([.claimWriter("cart-2")])
        func save(expecting revision: Int64, epoch: Int64 = 1) -> JournalOperation {
            .saveState(
                StateWrite(persistenceID: "cart-2", epoch: WriterEpoch(epoch), expectedRevision: revision, state: state)
            )
        }
        #expect(
            try await store.commit([
                save(expecting: 0), save(expecting: 0), save(expecting: 1), save(expecting: 2, epoch: 0),
            ])
                == [.written, .revisionConflict(current: 1), .written, .fenced(current: WriterEpoch(1))])
        #expect(try await store.durableState(of: "cart-2") == StoredState(revision: 2, state: state))
        #expect(try await store.durableState(of: "nothing") == nil)
        await test.close()
    }

    @Test(arguments: StoreKind.available) func aSecondIncarnationFencesTheFirst(kind: StoreKind) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let first = system.spawn(persistent: Cart(persistenceID: "cart-3"), journal: journal)
            #expect(try await first.ask { .add("a", $0) } == 1)
            let second = system.spawn(persistent: Cart(persistenceID: "cart-3"), journal: journal)
            #expect(try await second.ask { .items($0) } == ["a"])
            let refused = await askFailure { try await first.ask { .add("b", $0) } }
            guard case .fenced = refused?.rootCause as? PersistenceError else {
                Issue.record("expected the first incarnation to be fenced, got \(String(describing: refused))")
                return
            }
            #expect(try await second.ask { .add("c", $0) } == 2)
        }
    }
}
