import Testing
import Troupe
import TroupePersistence
import TroupeTestSupport

/// An event-sourced actor on every store: replies after the write, recovery, the stash,
/// atomic multi-event persists, snapshots, stopping.
@Suite struct EventSourcedActorTests {
    @Test(arguments: StoreKind.available) func repliesComeAfterTheEventsAreStoredAndRecoveryRebuildsTheState(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let account = system.spawn(persistent: Account(persistenceID: "account-1"), journal: journal)
            #expect(try await account.ask { .deposit(10, $0) } == 10)
            #expect(try await account.ask { .deposit(5, $0) } == 15)
            #expect(try await account.ask { .withdraw(3, $0) } == 12)
            let overdrawn = await askFailure { try await account.ask { .withdraw(100, $0) } }
            #expect(overdrawn?.rootCause is Account.Overdrawn)
            account.stop()
            _ = await account.terminated()

            let again = system.spawn(persistent: Account(persistenceID: "account-1"), journal: journal)
            #expect(try await again.ask { .balance($0) } == 12)
            #expect(try await again.ask { .history($0) } == [10, 5, -3])
            #expect(try await again.ask { .deposit(1, $0) } == 13)
        }
    }

    @Test(arguments: StoreKind.available) func commandsSentDuringRecoveryWaitAndAreHandledInOrder(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let first = system.spawn(persistent: Account(persistenceID: "account-2"), journal: journal)
            for amount in 1...50 { #expect(try await first.ask { .deposit(amount, $0) } > 0) }
            first.stop()
            _ = await first.terminated()

            // Told at once after spawn: they arrive while the actor recovers, and are stashed.
            let second = system.spawn(persistent: Account(persistenceID: "account-2"), journal: journal)
            let replies = (51...100).map { amount in Recorder<Int>() }
            for (amount, recorder) in zip(51...100, replies) {
                second.actorRef.ask(timeout: .seconds(30), { .command(.deposit(amount, $0)) }) { result in
                    if case .success(let balance) = result { recorder.append(balance) }
                }
            }
            #expect(try await second.ask { .history($0) } == Array(1...100))
            let balances = replies.map { $0.values.first ?? -1 }
            // Each deposit's reply carries the balance right after it: handled in the order sent.
            #expect(balances == (51...100).map { $0 * ($0 + 1) / 2 })
        }
    }

    @Test(arguments: StoreKind.available) func commandsThatArriveDuringAWriteAreWrittenTogether(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let account = system.spawn(persistent: Account(persistenceID: "account-8"), journal: journal)
            _ = try await account.ask { .balance($0) }
            let replies = (1...200).map { _ in Recorder<Int>() }
            for (amount, recorder) in zip(1...200, replies) {
                account.actorRef.ask({ .command(.deposit(amount, $0)) }) { result in
                    if case .success(let balance) = result { recorder.append(balance) }
                }
            }
            #expect(try await account.ask { .history($0) } == Array(1...200))
            // Each reply still carries the balance right after its own deposit.
            #expect(replies.map { $0.values.first ?? -1 } == (1...200).map { $0 * ($0 + 1) / 2 })
            let appends = journal.statistics.operations - 1  // the claim
            #expect(appends < 200, "200 pipelined deposits took \(appends) appends: none were grouped")
        }
    }

    @Test(arguments: StoreKind.available) func severalEventsOfOneCommandAreStoredTogether(kind: StoreKind) async throws
    {
        try await withDurableRig(kind) { system, journal, store async throws in
            let account = system.spawn(persistent: Account(persistenceID: "account-3"), journal: journal)
            #expect(try await account.ask { .depositEach([1, 2, 3], $0) } == 6)
            #expect(try await account.ask { .deposit(4, $0) } == 10)
            let history = try await store.history(of: "account-3")
            #expect(history.events.map(\.sequenceNumber) == [1, 2, 3, 4])
            let decoded = try history.events.map { try Account.eventCodec.decode($0.event) }
            #expect(decoded == [.deposited(1), .deposited(2), .deposited(3), .deposited(4)])
        }
    }

    @Test(arguments: StoreKind.available) func snapshotsAreTakenEveryNEventsAndRecoveryStartsFromTheNewest(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let id: PersistenceID = "account-4"
            let account = system.spawn(
                persistent: SnapshottingAccount(inner: Account(persistenceID: id)), journal: journal)
            for amount in 1...10 { _ = try await account.ask { .deposit(amount, $0) } }
            // Snapshots go through the journal after the write that made them due; wait for them.
            try await eventually("the snapshot after event 9") {
                try await store.history(of: id).snapshot?.sequenceNumber == 9
            }
            account.stop()
            _ = await account.terminated()
            let history = try await store.history(of: id)
            #expect(history.snapshot?.sequenceNumber == 9)
            #expect(history.events.map(\.sequenceNumber) == [10])
            if let memory = store as? InMemoryStore {
                #expect(memory.snapshots(of: id).map(\.sequenceNumber) == [6, 9], "keep: 2")
            }
            let again = system.spawn(
                persistent: SnapshottingAccount(inner: Account(persistenceID: id)), journal: journal)
            #expect(try await again.ask { .balance($0) } == 55)
            #expect(try await again.ask { .history($0) } == Array(1...10))
        }
    }

    @Test(arguments: StoreKind.available) func thenStopStopsAfterTheWriteAndLaterCommandsAreDeadLetters(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let account = system.spawn(persistent: Account(persistenceID: "account-5"), journal: journal)
            _ = try await account.ask { .deposit(7, $0) }
            let deadBefore = system.deadLetters.total
            #expect(try await account.ask { .close($0) } == 7)
            let terminated = await account.terminated()
            #expect(!terminated.reason.isFailure)
            let late = await askFailure { try await account.ask(timeout: .seconds(5)) { .balance($0) } }
            #expect(late != nil, "a command to a stopped durable actor fails its ask")
            #expect(system.deadLetters.total > deadBefore)
        }
    }

    @Test(arguments: StoreKind.available) func aSecondIncarnationFencesTheFirstWhoseWriteFailsWithATypedError(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let first = system.spawn(persistent: Account(persistenceID: "account-6"), journal: journal)
            #expect(try await first.ask { .deposit(1, $0) } == 1)
            let second = system.spawn(persistent: Account(persistenceID: "account-6"), journal: journal)
            #expect(try await second.ask { .balance($0) } == 1)  // recovered: it holds the newer epoch
            let refused = await askFailure { try await first.ask { .deposit(2, $0) } }
            guard case .fenced(let id, let epoch, let current) = refused?.rootCause as? PersistenceError else {
                Issue.record("expected a fenced PersistenceError, got \(String(describing: refused))")
                return
            }
            #expect(id == "account-6")
            #expect(epoch < current)
            let terminated = await first.terminated()
            #expect(terminated.reason.isFailure, "a refused write fails the actor (its supervision decides)")
            #expect(try await second.ask { .deposit(2, $0) } == 3)
        }
    }

    @Test func aStashBeyondItsCapacityFailsTheActor() async throws {
        let system = makeTestSystem()
        let journal = Journal(store: SlowStore(delay: .milliseconds(200)))
        let account = system.spawn(
            persistent: Account(persistenceID: "account-7"), journal: journal,
            settings: PersistenceSettings(stashCapacity: 4))
        for amount in 1...10 { account.actorRef.ask({ .command(.deposit(amount, $0)) }, onReply: { _ in }) }
        let terminated = await account.terminated()
        guard case .failed(let error) = terminated.reason,
            case .stashOverflow(_, let capacity) = error as? PersistenceError
        else {
            Issue.record("expected a stash overflow, got \(terminated.reason)")
            return
        }
        #expect(capacity == 4)
        await system.shutdown()
        await journal.shutdown()
    }
}

/// The error an ask failed with (nil when it succeeded).
func askFailure<Value>(_ body: () async throws -> Value) async -> AskError? {
    do {
        _ = try await body()
        return nil
    } catch {
        #expect(error is AskError, "an ask fails with an AskError, not \(error)")
        return error as? AskError
    }
}

/// Polls `condition` (async) every few milliseconds for up to 20 s.
func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while try await !condition() {
        if ContinuousClock.now > deadline {
            Issue.record("timed out waiting for \(what)")
            return
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// An in-memory store whose commits take `delay` (to hold an actor in recovery).
struct SlowStore: PersistenceStore {
    let inner = InMemoryStore()
    let delay: Duration
    func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        try await Task.sleep(for: delay)
        return try await inner.commit(operations)
    }
    func history(of id: PersistenceID) async throws -> StoredHistory { try await inner.history(of: id) }
    func durableState(of id: PersistenceID) async throws -> StoredState? { try await inner.durableState(of: id) }
    func storedEventVersions() async throws -> Set<StoredTypeVersion> { try await inner.storedEventVersions() }
}
