import Synchronization

/// The front of an ``PersistenceStore`` that durable actors share: it gathers their writes into
/// batches (group commit) and gives each actor its outcome when its batch is durable.
///
/// Batching adapts to load without a timer: the first write starts a commit at once; writes
/// that arrive while it is in flight wait and go together in the next one, up to
/// ``Settings/maxOperationsPerBatch`` operations and ``Settings/maxEventsPerBatch`` events.
/// Under light load a write waits for nothing; under heavy load batches grow until one commit
/// carries what arrived during the previous one, so the store commits at its own pace and
/// each write waits at most about two commit times.
///
/// Make one journal per store and share it among the actors (batches cross actors only within
/// one journal).
public final class Journal: Sendable {
    /// Bounds on one batch.
    public struct Settings: Sendable {
        /// At most this many operations per commit (default 1,000).
        public var maxOperationsPerBatch: Int
        /// At most about this many events per commit (default 1,000; one append larger than
        /// this goes alone).
        public var maxEventsPerBatch: Int

        /// How many actors recover at once.
        public var recoveries: RecoveryLimits

        public init(
            maxOperationsPerBatch: Int = 1_000, maxEventsPerBatch: Int = 1_000,
            recoveries: RecoveryLimits = RecoveryLimits()
        ) {
            precondition(maxOperationsPerBatch >= 1 && maxEventsPerBatch >= 1, "a batch holds at least one operation")
            self.maxOperationsPerBatch = maxOperationsPerBatch
            self.maxEventsPerBatch = maxEventsPerBatch
            self.recoveries = recoveries
        }
    }

    /// Counters since the journal was made.
    public struct Statistics: Sendable, Hashable {
        /// Commits made (batches).
        public var batches = 0
        /// Operations committed or refused.
        public var operations = 0
        /// Events stored.
        public var events = 0
        /// The most operations one batch carried.
        public var largestBatch = 0
        /// Batches the store failed as a whole.
        public var failedBatches = 0
        /// Recoveries admitted so far.
        public var recoveriesAdmitted = 0
        /// Recoveries running now, and waiting for a permit.
        public var recoveriesActive = 0
        public var recoveriesWaiting = 0
        /// The current bound on concurrent recoveries (it adapts; see ``RecoveryLimits``).
        public var recoveryLimit = 0
    }

    typealias Completion = @Sendable (Result<JournalOutcome, any Error>) -> Void

    struct Pending {
        let operation: JournalOperation
        let completion: Completion
        var eventCount: Int {
            if case .append(let append) = operation { return append.events.count }
            return 0
        }
    }

    struct Queue {
        var pending: [Pending] = []
        var committing = false
        var closed = false
        var statistics = Statistics()
    }

    /// The store the journal writes to and recovery reads from.
    public let store: any PersistenceStore
    public let settings: Settings
    /// Where commits run (nil: Swift's global executor).
    private let executor: (any TaskExecutor)?
    private let queue = Mutex(Queue())
    /// Admits recoveries a few at a time.
    let recoveryGate: RecoveryGate
    /// History reads waiting for the next batched read, and whether one is in flight.
    private let reads = Mutex<
        (pending: [(PersistenceID, CheckedContinuation<StoredHistory, any Error>)], reading: Bool)
    >(
        ([], false))

    /// A journal on `store`. Commits run as tasks on `executor`: nil (the default) for Swift's
    /// global executor; `system.taskExecutor` to keep them on Troupe's workers, or a
    /// `DeterministicSystem`'s so that a test's schedule includes them.
    public init(store: any PersistenceStore, settings: Settings = Settings(), executor: (any TaskExecutor)? = nil) {
        self.store = store
        self.settings = settings
        self.executor = executor
        recoveryGate = RecoveryGate(limits: settings.recoveries)
    }

    /// Counters since the journal was made.
    public var statistics: Statistics {
        var statistics = queue.withLock { $0.statistics }
        let gate = recoveryGate.snapshot
        statistics.recoveryLimit = gate.limit
        statistics.recoveriesActive = gate.active
        statistics.recoveriesWaiting = gate.waiting
        statistics.recoveriesAdmitted = gate.admitted
        return statistics
    }

    /// Queues `operation` for the next batch and calls `completion` once with its outcome, on
    /// the thread that finished the batch (keep it short: tell an actor).
    public func submit(
        _ operation: JournalOperation, completion: @escaping @Sendable (Result<JournalOutcome, any Error>) -> Void
    ) {
        let start: Bool? = queue.withLock { queue in
            if queue.closed { return nil }
            queue.pending.append(Pending(operation: operation, completion: completion))
            if queue.committing { return false }
            queue.committing = true
            return true
        }
        switch start {
        case nil: completion(.failure(PersistenceError.journalClosed))
        case true?: run { await self.commitWhilePending() }
        case false?: break
        }
    }

    /// Commits `operation` in the next batch and returns its outcome.
    public func commit(_ operation: JournalOperation) async throws -> JournalOutcome {
        try await withCheckedThrowingContinuation { continuation in
            submit(operation) { continuation.resume(with: $0) }
        }
    }

    /// The history of `id`, read together with those of the other recoveries waiting (one
    /// ``PersistenceStore/histories(of:)`` call for up to ``Settings/maxOperationsPerBatch``
    /// identities): batching reads as commits batch writes, so that thousands of actors
    /// recovering at once cost a few queries, not thousands.
    public func history(of id: PersistenceID) async throws -> StoredHistory {
        try await withCheckedThrowingContinuation { continuation in
            let start = reads.withLock { reads -> Bool in
                reads.pending.append((id, continuation))
                if reads.reading { return false }
                reads.reading = true
                return true
            }
            if start { run { await self.readWhilePending() } }
        }
    }

    /// Starts `body` as a task on the journal's executor.
    private func run(_ body: @escaping @Sendable () async -> Void) {
        if let executor {
            Task(executorPreference: executor) { await body() }
        } else {
            Task.detached { await body() }
        }
    }

    private func readWhilePending() async {
        while true {
            let batch = reads.withLock { reads -> [(PersistenceID, CheckedContinuation<StoredHistory, any Error>)] in
                let count = min(reads.pending.count, settings.maxOperationsPerBatch)
                let batch = Array(reads.pending.prefix(count))
                reads.pending.removeFirst(count)
                if batch.isEmpty { reads.reading = false }
                return batch
            }
            if batch.isEmpty { return }
            do {
                let histories = try await store.histories(of: Array(Set(batch.map(\.0))))
                for (id, continuation) in batch {
                    continuation.resume(returning: histories[id] ?? StoredHistory(snapshot: nil, events: []))
                }
            } catch {
                for (_, continuation) in batch { continuation.resume(throwing: error) }
            }
        }
    }

    /// Checks that `codec` can read every version of its type the store holds: call it at
    /// start, so that a missing upcaster stops the deploy instead of a recovery.
    public func check<Value>(_ codec: PersistenceCodec<Value>) async throws {
        try codec.check(storedVersions: try await store.storedEventVersions())
    }

    /// Refuses new writes (they fail with ``PersistenceError/journalClosed``) and returns when
    /// every queued one has its outcome.
    public func shutdown() async {
        queue.withLock { $0.closed = true }
        while queue.withLock({ $0.committing }) {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Runs batches until nothing is pending. One runs at a time (`committing`).
    private func commitWhilePending() async {
        while true {
            let batch: [Pending] = queue.withLock { queue in
                var events = 0
                var count = 0
                for pending in queue.pending {
                    if count == settings.maxOperationsPerBatch { break }
                    if count > 0 && events + pending.eventCount > settings.maxEventsPerBatch { break }
                    events += pending.eventCount
                    count += 1
                }
                let batch: [Pending]
                if count == queue.pending.count {
                    batch = queue.pending
                    queue.pending = []
                } else {
                    batch = Array(queue.pending.prefix(count))
                    queue.pending.removeFirst(count)
                }
                if batch.isEmpty { queue.committing = false }
                return batch
            }
            if batch.isEmpty { return }
            do {
                let outcomes = try await store.commit(batch.map(\.operation))
                precondition(
                    outcomes.count == batch.count,
                    "\(type(of: store)).commit returned \(outcomes.count) outcomes for \(batch.count) operations")
                record(batch, outcomes: outcomes)
                for (pending, outcome) in zip(batch, outcomes) { pending.completion(.success(outcome)) }
            } catch {
                record(batch, outcomes: nil)
                for pending in batch { pending.completion(.failure(error)) }
            }
        }
    }

    private func record(_ batch: [Pending], outcomes: [JournalOutcome]?) {
        queue.withLock { queue in
            queue.statistics.batches += 1
            queue.statistics.operations += batch.count
            queue.statistics.largestBatch = max(queue.statistics.largestBatch, batch.count)
            guard let outcomes else {
                queue.statistics.failedBatches += 1
                return
            }
            for (pending, outcome) in zip(batch, outcomes) where outcome == .written {
                queue.statistics.events += pending.eventCount
            }
        }
    }
}
