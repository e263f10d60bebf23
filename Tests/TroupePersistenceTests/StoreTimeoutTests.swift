import Testing
import Troupe
import TroupePersistence
import TroupeTestSupport

/// An in-memory store whose first `hangs` commits never answer (as a driver that lost its
/// connection without noticing).
final class HangingStore: PersistenceStore {
    let inner = InMemoryStore()
    private let hangsLeft: LockedValue<Int>

    init(hangs: Int) { hangsLeft = LockedValue(hangs) }

    func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        let hang = hangsLeft.withLock { left -> Bool in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
        // "Never": an hour, ignoring cancellation, as a call that is stuck would.
        if hang { try? await Task.sleep(for: .seconds(3_600)) }
        return try await inner.commit(operations)
    }
    func history(of id: PersistenceID) async throws -> StoredHistory { try await inner.history(of: id) }
    func durableState(of id: PersistenceID) async throws -> StoredState? { try await inner.durableState(of: id) }
    func storedEventVersions() async throws -> Set<StoredTypeVersion> { try await inner.storedEventVersions() }
}

/// A store call that never returns fails after `Journal.Settings.storeTimeout`, and the journal
/// goes on with the next batch.
@Suite struct StoreTimeoutTests {
    @Test func aCommitThatNeverAnswersFailsAfterTheTimeoutAndTheJournalGoesOn() async throws {
        let store = HangingStore(hangs: 1)
        let journal = Journal(store: store, settings: .init(storeTimeout: .milliseconds(200)))
        let system = makeTestSystem()
        // The first commit (the claim of the first recovery) hangs: that recovery fails.
        let first = system.spawn(persistent: Account(persistenceID: "stuck"), journal: journal)
        let started = ContinuousClock.now
        let result = await first.actorRef.askResult(timeout: .seconds(30)) { .command(.deposit(1, $0)) }
        let waited = ContinuousClock.now - started
        guard case .failure(.failed(let cause)) = result,
            case .recoveryFailed(_, let underlying) = cause as? PersistenceError,
            let timedOut = underlying as? StoreTimedOut
        else {
            Issue.record("expected recoveryFailed(StoreTimedOut), got \(result)")
            return
        }
        #expect(timedOut.after == .milliseconds(200))
        #expect(waited < .seconds(10), "failed at the store timeout, not the ask's: \(waited)")
        #expect(journal.statistics.timedOutCalls == 1)
        // The journal is not stuck behind the hung call: the next actor recovers and writes.
        let second = system.spawn(persistent: Account(persistenceID: "next"), journal: journal)
        #expect(try await second.ask(timeout: .seconds(10)) { .deposit(5, $0) } == 5)
        await system.shutdown()
        await journal.shutdown()
    }
}
