import Synchronization
import Testing
import Troupe
import TroupePersistence
import TroupeTestSupport

/// An in-memory store whose reads take `readDelay`, recording their order and how many ran at
/// once.
final class ObservedStore: PersistenceStore {
    let inner = InMemoryStore()
    let readDelay: Duration
    private let reads = Mutex<(order: [PersistenceID], running: Int, most: Int)>(([], 0, 0))

    init(readDelay: Duration) { self.readDelay = readDelay }

    var readOrder: [PersistenceID] { reads.withLock { $0.order } }
    var mostConcurrentReads: Int { reads.withLock { $0.most } }

    func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        try await inner.commit(operations)
    }
    func history(of id: PersistenceID) async throws -> StoredHistory {
        reads.withLock {
            $0.order.append(id)
            $0.running += 1
            $0.most = max($0.most, $0.running)
        }
        try await Task.sleep(for: readDelay)
        reads.withLock { $0.running -= 1 }
        return try await inner.history(of: id)
    }
    func durableState(of id: PersistenceID) async throws -> StoredState? { try await inner.durableState(of: id) }
    func storedEventVersions() async throws -> Set<StoredTypeVersion> { try await inner.storedEventVersions() }
}

/// Many actors starting at once recover a few at a time, those with commands waiting first.
@Suite struct RecoveryAdmissionTests {
    @Test func recoveriesRunAtMostTheLimitAtOnceAndAllComplete() async throws {
        let store = ObservedStore(readDelay: .milliseconds(2))
        let journal = Journal(
            store: store, settings: .init(recoveries: RecoveryLimits(initial: 2, minimum: 1, maximum: 3)))
        let system = makeTestSystem()
        let accounts = (0..<40).map {
            system.spawn(persistent: Account(persistenceID: PersistenceID("a-\($0)")), journal: journal)
        }
        for account in accounts { #expect(try await account.ask { .deposit(1, $0) } == 1) }
        #expect(store.mostConcurrentReads <= 3, "the limit's maximum is 3")
        #expect(store.readOrder.count == 40)
        let statistics = journal.statistics
        #expect(statistics.recoveriesAdmitted == 40)
        #expect(statistics.recoveriesActive == 0 && statistics.recoveriesWaiting == 0)
        await system.shutdown()
        await journal.shutdown()
    }

    @Test func anActorWithACommandWaitingRecoversBeforeThoseWithout() async throws {
        let store = ObservedStore(readDelay: .milliseconds(20))
        let journal = Journal(
            store: store, settings: .init(recoveries: RecoveryLimits(initial: 1, minimum: 1, maximum: 1)))
        let system = makeTestSystem()
        let quiet = (0..<6).map {
            system.spawn(persistent: Account(persistenceID: PersistenceID("quiet-\($0)")), journal: journal)
        }
        let busy = system.spawn(persistent: Account(persistenceID: "busy"), journal: journal)
        #expect(try await busy.ask { .deposit(5, $0) } == 5)
        // One permit: one quiet actor may have started before the command arrived, then "busy".
        let position = try #require(store.readOrder.firstIndex(of: "busy"))
        #expect(position <= 1, "read order: \(store.readOrder)")
        for account in quiet { _ = try await account.ask { .balance($0) } }
        await system.shutdown()
        await journal.shutdown()
    }
}
