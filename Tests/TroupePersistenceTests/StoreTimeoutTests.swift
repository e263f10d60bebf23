import Testing
import Troupe
@testable import TroupePersistence
import TroupeTestSupport
internal import TroupeLocks

/// How many of a store's commits are still to hang, and for how long.
final class HangBudget: Sendable {
    private let left: Locked<Int>
    let delay: Duration

    init(hangs: Int, delay: Duration) {
        left = Locked(hangs)
        self.delay = delay
    }

    /// Whether the commit starting now hangs (using one of the budget if so).
    func nextHangs() -> Bool {
        left.withLock { left in
            guard left > 0 else { return false }
            left -= 1
            return true
        }
    }
}

/// An in-memory store whose first `hangs` commits answer only after `delay` (an hour: never, as
/// a driver that lost its connection without noticing).
final class HangingStore: PersistenceStore {
    let inner = InMemoryStore()
    private let budget: HangBudget

    init(hangs: Int, delay: Duration = .seconds(3_600)) {
        budget = HangBudget(hangs: hangs, delay: delay)
    }

    func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        // Ignoring cancellation, as a call that is stuck would.
        if budget.nextHangs() { try? await Task.sleep(for: budget.delay) }
        return try await inner.commit(operations)
    }
    func history(of id: PersistenceID) async throws -> StoredHistory { try await inner.history(of: id) }
    func durableState(of id: PersistenceID) async throws -> StoredState? { try await inner.durableState(of: id) }
    func storedEventVersions() async throws -> Set<StoredTypeVersion> { try await inner.storedEventVersions() }
}

/// The same as a ``CallbackCommittingStore``, which the journal hands batches without a task:
/// a hanging commit calls back from another thread after `delay`; the others call back before
/// returning, on the journal's thread.
final class HangingCallbackStore: CallbackCommittingStore {
    let inner = InMemoryStore()
    private let budget: HangBudget

    init(hangs: Int, delay: Duration = .seconds(3_600)) {
        budget = HangBudget(hangs: hangs, delay: delay)
    }

    func commit(
        _ operations: [JournalOperation],
        completion: @escaping @Sendable (Result<[JournalOutcome], any Error>) -> Void
    ) {
        if budget.nextHangs() {
            Task.detached { [inner, budget] in
                try? await Task.sleep(for: budget.delay)
                completion(.success(inner.commitNow(operations)))
            }
        } else {
            completion(.success(inner.commitNow(operations)))
        }
    }
    func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        try await inner.commit(operations)
    }
    func history(of id: PersistenceID) async throws -> StoredHistory { try await inner.history(of: id) }
    func durableState(of id: PersistenceID) async throws -> StoredState? { try await inner.durableState(of: id) }
    func storedEventVersions() async throws -> Set<StoredTypeVersion> { try await inner.storedEventVersions() }
}

/// Which kind of store a test's hanging commit comes from.
enum HangingKind: CaseIterable, CustomTestStringConvertible {
    case async, callback
    var testDescription: String { self == .async ? "PersistenceStore" : "CallbackCommittingStore" }
    func store(hangs: Int, delay: Duration = .seconds(3_600)) -> any PersistenceStore {
        switch self {
        case .async: HangingStore(hangs: hangs, delay: delay)
        case .callback: HangingCallbackStore(hangs: hangs, delay: delay)
        }
    }
}

/// A store call that never returns fails after `Journal.Settings.storeTimeout`, and the journal
/// goes on with the next batch.
@Suite struct StoreTimeoutTests {
    @Test(arguments: HangingKind.allCases)
    func aCommitThatNeverAnswersFailsAfterTheTimeoutAndTheJournalGoesOn(kind: HangingKind) async throws {
        let store = kind.store(hangs: 1)
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

struct BatchedReadRefused: Error {}

/// A store whose batched reads fail, and whose reads of "hangs" never answer.
final class HangingReadStore: PersistenceStore {
    let inner = InMemoryStore()

    func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        try await inner.commit(operations)
    }
    func histories(of ids: [PersistenceID]) async throws -> [PersistenceID: StoredHistory] {
        if ids.count > 1 { throw BatchedReadRefused() }
        return [ids[0]: try await history(of: ids[0])]
    }
    func history(of id: PersistenceID) async throws -> StoredHistory {
        if id == "hangs" { try? await Task.sleep(for: .seconds(3_600)) }
        return try await inner.history(of: id)
    }
    func durableState(of id: PersistenceID) async throws -> StoredState? { try await inner.durableState(of: id) }
    func storedEventVersions() async throws -> Set<StoredTypeVersion> { try await inner.storedEventVersions() }
}

extension StoreTimeoutTests {
    /// A commit that answers after the journal gave up on it: its batch has already failed, the
    /// late answer is dropped (no second outcome), and the journal goes on.
    @Test(arguments: HangingKind.allCases)
    func aLateAnswerAfterTheTimeoutIsDropped(kind: HangingKind) async throws {
        let store = kind.store(hangs: 1, delay: .milliseconds(600))
        let journal = Journal(store: store, settings: .init(storeTimeout: .milliseconds(200)))
        await #expect(throws: StoreTimedOut.self) { try await journal.commit(.claimWriter("late")) }
        // Let the late answer arrive and be dropped, then write again.
        try await Task.sleep(for: .seconds(1))
        let next = try await journal.commit(.claimWriter("next"))
        guard case .claimed = next else {
            Issue.record("expected the claim to be answered, got \(next)")
            return
        }
        let statistics = journal.statistics
        #expect(statistics.timedOutCalls == 1)
        #expect(statistics.failedBatches == 1)
        #expect(statistics.batches == 2)
        await journal.shutdown()
    }

    /// A read that never answers fails after the timeout, as do the reads queued in the same
    /// batch after it; reads after that are answered.
    @Test func aReadThatNeverAnswersFailsAfterTheTimeoutAndReadsGoOn() async throws {
        let store = HangingReadStore()
        let journal = Journal(store: store, settings: .init(storeTimeout: .milliseconds(200)))
        let ids: [PersistenceID] = ["a", "hangs", "b", "c"]
        let results = await withTaskGroup(of: (PersistenceID, Result<StoredHistory, any Error>).self) { group in
            for id in ids {
                group.addTask {
                    do { return (id, .success(try await journal.history(of: id))) } catch {
                        return (id, .failure(error))
                    }
                }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (id, result) in results {
            switch result {
            case .success: #expect(id != "hangs", "the read of \(id) cannot have been answered")
            case .failure(let error): #expect(error is StoreTimedOut, "\(id) failed with \(error)")
            }
        }
        #expect(results.count == ids.count)
        #expect(journal.statistics.timedOutCalls >= 1)
        // The journal reads again.
        #expect(try await journal.history(of: "a").events.isEmpty)
        await journal.shutdown()
    }
}
