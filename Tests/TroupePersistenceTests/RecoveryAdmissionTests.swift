import Testing
import Troupe
@testable import TroupePersistence
import TroupeTestSupport
internal import TroupeLocks

/// An in-memory store whose reads take `readDelay`, recording their order and how many ran at
/// once.
final class ObservedStore: PersistenceStore {
    let inner = InMemoryStore()
    let readDelay: Duration
    private let reads = Locked<(order: [PersistenceID], running: Int, most: Int)>(([], 0, 0))

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

/// The recovery window's rule, without a store: grow by one, cut once per burst.
@Suite struct RecoveryWindowTests {
    let limits = RecoveryLimits(initial: 32, minimum: 4, maximum: 40, targetLatency: .milliseconds(100))
    let start = ContinuousClock.now

    @Test func fastRecoveriesGrowTheWindowByOneOnlyWhileOthersWait() {
        var window = RecoveryWindow(limits: limits)
        window.finished(startedAt: start, now: start + .milliseconds(10), othersWaiting: false)
        #expect(window.permits == 32, "nobody waiting: no reason to grow")
        for _ in 0..<20 { window.finished(startedAt: start, now: start + .milliseconds(10), othersWaiting: true) }
        #expect(window.permits == 40, "grew by one each, then held at the maximum")
    }

    @Test func aBurstOfSlowRecoveriesCutsTheWindowOnce() {
        var window = RecoveryWindow(limits: limits)
        // 32 recoveries admitted together, all slow: one cut (32 → 24), not 32 (which would reach 4).
        for finishing in 0..<32 {
            window.finished(
                startedAt: start, now: start + .milliseconds(200 + finishing), othersWaiting: true)
        }
        #expect(window.permits == 24)
        // One admitted after that cut and slow too: a second cut (24 → 18).
        let later = start + .milliseconds(300)
        window.finished(startedAt: later, now: later + .milliseconds(150), othersWaiting: true)
        #expect(window.permits == 18)
    }

    @Test func cutsStopAtTheMinimum() {
        var window = RecoveryWindow(limits: limits)
        var clock = start
        for _ in 0..<50 {
            window.finished(startedAt: clock, now: clock + .milliseconds(101), othersWaiting: true)
            clock += .milliseconds(200)
        }
        #expect(window.permits == 4)
    }
}
