import Synchronization
import Troupe
internal import TroupeLocks

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
        /// A commit or read the store has not answered after this long fails with
        /// ``StoreTimedOut`` (default 30 s; nil waits for ever), and the journal goes on with
        /// the next batch: a store call that hangs (a connection lost in a way its driver never
        /// reports) must not stop every actor that writes through the journal.
        public var storeTimeout: Duration?

        public init(
            maxOperationsPerBatch: Int = 1_000, maxEventsPerBatch: Int = 1_000,
            recoveries: RecoveryLimits = RecoveryLimits(), storeTimeout: Duration? = .seconds(30)
        ) {
            precondition(maxOperationsPerBatch >= 1 && maxEventsPerBatch >= 1, "a batch holds at least one operation")
            precondition(storeTimeout.map { $0 > .zero } ?? true, "a store timeout must be positive (nil for none)")
            self.maxOperationsPerBatch = maxOperationsPerBatch
            self.maxEventsPerBatch = maxEventsPerBatch
            self.recoveries = recoveries
            self.storeTimeout = storeTimeout
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
        /// Store calls (commits and reads) abandoned after ``Settings/storeTimeout``.
        public var timedOutCalls = 0
        /// Recoveries admitted so far.
        public var recoveriesAdmitted = 0
        /// Recoveries running now, and waiting for a permit.
        public var recoveriesActive = 0
        public var recoveriesWaiting = 0
        /// The current bound on concurrent recoveries (it adapts; see ``RecoveryLimits``).
        public var recoveryLimit = 0
        /// Operations waiting for the next batch now (the journal's lag behind its writers).
        public var queuedOperations = 0
        /// Per operation, from ``Journal/submit(_:completion:)`` to its outcome: the wait for a
        /// batch, the commit, and the answer (what a durable actor's write waits).
        public var writeLatency = LatencyHistogram()
        /// Per batch, the store's commit (or the store timeout, for an abandoned one).
        public var commitDuration = LatencyHistogram()
        /// Per recovery that got a permit, from asking to recover (at spawn or restart) to the
        /// end of the recovery, done or failed: the wait for a permit, the claim, the read and
        /// the replay.
        public var recoveryLatency = LatencyHistogram()
    }

    typealias Completion = @Sendable (Result<JournalOutcome, any Error>) -> Void

    struct Pending {
        let operation: JournalOperation
        let completion: Completion
        let submittedAt: ContinuousClock.Instant
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
    /// The store, when batches go to it without a task (see ``CallbackCommittingStore``).
    private let committingStore: (any CallbackCommittingStore)?
    private let queue = Locked(Queue())
    /// Admits recoveries a few at a time.
    let recoveryGate: RecoveryGate
    /// History reads waiting for the next batched read, and whether one is in flight.
    private let reads = Locked<
        (pending: [(PersistenceID, CheckedContinuation<StoredHistory, any Error>)], reading: Bool)
    >(
        ([], false))

    /// A journal on `store`. Commits run as tasks on `executor`: nil (the default) for Swift's
    /// global executor; `system.taskExecutor` to keep them on Troupe's workers, or a
    /// `DeterministicSystem`'s so that a test's schedule includes them. With no executor, a
    /// ``CallbackCommittingStore`` (`SQLiteStore`) is handed its batches directly and runs them,
    /// and the answers, on its own thread.
    public init(store: any PersistenceStore, settings: Settings = Settings(), executor: (any TaskExecutor)? = nil) {
        self.store = store
        self.settings = settings
        self.executor = executor
        committingStore = executor == nil ? store as? any CallbackCommittingStore : nil
        recoveryGate = RecoveryGate(limits: settings.recoveries)
    }

    /// Latencies any thread records (see ``Statistics``).
    private let writeLatency = LatencyRecorder()
    private let commitDuration = LatencyRecorder()
    let recoveryLatency = LatencyRecorder()
    /// The systems whose snapshots show this journal's section (weakly: a system may go first).
    let shownIn = Locked<[WeakSystem]>([])
    struct WeakSystem {
        weak var system: ActorSystem?
    }
    /// This journal's number in the process, naming its ``snapshotSection``.
    private let number = Journal.made.add(1, ordering: .relaxed).newValue
    private static let made = Atomic<Int>(0)

    /// Counters since the journal was made.
    public var statistics: Statistics {
        var statistics = queue.withLock { queue in
            var statistics = queue.statistics
            statistics.queuedOperations = queue.pending.count
            return statistics
        }
        statistics.writeLatency = writeLatency.histogram
        statistics.commitDuration = commitDuration.histogram
        statistics.recoveryLatency = recoveryLatency.histogram
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
            queue.pending.append(Pending(operation: operation, completion: completion, submittedAt: .now))
            if queue.committing { return false }
            queue.committing = true
            return true
        }
        switch start {
        case nil: completion(.failure(PersistenceError.journalClosed))
        case true?: startCommitting()
        case false?: break
        }
    }

    /// Starts the loop that commits batches until nothing is pending (`committing` is true).
    private func startCommitting() {
        if let committingStore {
            commitWhilePending(on: committingStore)
        } else {
            run { await self.commitWhilePending() }
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
            let ids = Array(Set(batch.map(\.0)))
            let read = await watched({ [store] in try await store.histories(of: ids) }) { timedOut in
                self.abandonReads(batch[...], with: timedOut)
            }
            switch read {
            case nil: return  // abandoned: its reads have failed and another loop carries on
            case .success(let histories)?:
                for (id, continuation) in batch {
                    continuation.resume(returning: histories[id] ?? StoredHistory(snapshot: nil, events: []))
                }
            case .failure where batch.count > 1:
                // One unreadable history (a damaged page, a malformed row) must not fail every
                // recovery read with it: read each alone, so only the damaged ones fail.
                for index in batch.indices {
                    let (id, continuation) = batch[index]
                    let single = await watched({ [store] in try await store.history(of: id) }) { timedOut in
                        self.abandonReads(batch[index...], with: timedOut)
                    }
                    guard let single else { return }
                    continuation.resume(with: single)
                }
            case .failure(let error)?:
                for (_, continuation) in batch { continuation.resume(throwing: error) }
            }
        }
    }

    /// Fails the reads a stuck store call left waiting, and starts a loop for those queued
    /// behind it (`reading` stays true: the new loop takes over from the stuck one).
    private func abandonReads(
        _ reads: ArraySlice<(PersistenceID, CheckedContinuation<StoredHistory, any Error>)>, with error: StoreTimedOut
    ) {
        for (_, continuation) in reads { continuation.resume(throwing: error) }
        run { await self.readWhilePending() }
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

    /// The next batch, taken from the queue; empty when nothing is pending, and then the loop
    /// that asked has ended (`committing` is false).
    private func nextBatch() -> [Pending] {
        queue.withLock { queue in
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
    }

    /// Runs batches until nothing is pending. One runs at a time (`committing`).
    private func commitWhilePending() async {
        while true {
            let batch = nextBatch()
            if batch.isEmpty { return }
            let operations = batch.map(\.operation)
            let started = ContinuousClock.now
            let commit = await watched({ [store] in try await store.commit(operations) }) { timedOut in
                self.abandonCommit(batch, with: timedOut)
            }
            guard let commit else { return }  // abandoned: its batch has failed and another loop carries on
            commitDuration.record(.now - started)
            answer(batch, with: commit)
        }
    }

    /// The same loop without a task: each batch goes to `store` from the thread that runs the
    /// loop, and the store's thread, having answered it, runs the loop on. A store that calls
    /// back before returning leaves the loop to this frame (`InlineCheck`), so that the stack
    /// does not grow by a frame per batch.
    private func commitWhilePending(on store: any CallbackCommittingStore) {
        while true {
            let batch = nextBatch()
            if batch.isEmpty { return }
            let started = ContinuousClock.now
            let ticket = settings.storeTimeout.map { timeout in
                StoreCallWatchdog.shared.watch(for: timeout) { [self] in
                    queue.withLock { $0.statistics.timedOutCalls += 1 }
                    abandonCommit(batch, with: StoreTimedOut(after: timeout))
                }
            }
            let check = InlineCheck()
            store.commit(batch.map(\.operation)) { [self] commit in
                // Abandoned: its batch has failed and another loop carries on.
                if let ticket, !StoreCallWatchdog.shared.finish(ticket) { return }
                commitDuration.record(.now - started)
                answer(batch, with: commit)
                if check.calledBack() { commitWhilePending(on: store) }
            }
            if check.returned() { return }
        }
    }

    /// Gives each operation of `batch` its outcome, or the commit's error.
    private func answer(_ batch: [Pending], with commit: Result<[JournalOutcome], any Error>) {
        switch commit {
        case .success(let outcomes):
            precondition(
                outcomes.count == batch.count,
                "\(type(of: store)).commit returned \(outcomes.count) outcomes for \(batch.count) operations")
            record(batch, outcomes: outcomes)
            for (pending, outcome) in zip(batch, outcomes) { pending.completion(.success(outcome)) }
        case .failure(let error):
            record(batch, outcomes: nil)
            for pending in batch { pending.completion(.failure(error)) }
        }
    }

    /// Fails the batch a stuck commit left waiting, and starts a loop for the writes queued
    /// behind it (`committing` stays true: the new loop takes over from the stuck one).
    private func abandonCommit(_ batch: [Pending], with error: StoreTimedOut) {
        commitDuration.record(error.after)
        record(batch, outcomes: nil)
        for pending in batch { pending.completion(.failure(error)) }
        startCommitting()
    }

    /// Awaits `call` where it stands (no task or thread hop), watched by
    /// ``StoreCallWatchdog``: its result, or nil if ``Settings/storeTimeout`` passed first and
    /// `abandon` ran instead. The call is then left to finish or not: a write may still land
    /// later, which writer epochs make safe — the actor that waited for it has failed, and a new
    /// incarnation either sees it in its recovery or, having claimed the identity first, has it
    /// refused as stale.
    private func watched<T>(
        _ call: () async throws -> T, abandon: @escaping @Sendable (StoreTimedOut) -> Void
    ) async -> Result<T, any Error>? {
        guard let timeout = settings.storeTimeout else {
            do { return .success(try await call()) } catch { return .failure(error) }
        }
        let ticket = StoreCallWatchdog.shared.watch(for: timeout) { [self] in
            queue.withLock { $0.statistics.timedOutCalls += 1 }
            abandon(StoreTimedOut(after: timeout))
        }
        let result: Result<T, any Error>
        do { result = .success(try await call()) } catch { result = .failure(error) }
        return StoreCallWatchdog.shared.finish(ticket) ? result : nil
    }

    /// Counts a batch's outcome and its operations' latencies (before their completions run, so
    /// that a writer that has its answer finds it counted).
    private func record(_ batch: [Pending], outcomes: [JournalOutcome]?) {
        let now = ContinuousClock.now
        for pending in batch { writeLatency.record(now - pending.submittedAt) }
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

extension Journal {
    /// The journal's ``statistics`` as a section of `ActorSystem.snapshot()` (kind `journal`),
    /// which also puts them in TroupeMetrics. A journal provides it to each system that spawns
    /// a durable actor on it, for as long as the journal exists.
    public var snapshotSection: SnapshotSection {
        let statistics = statistics
        return SnapshotSection(
            kind: "journal", instance: "\(type(of: store)) #\(number)",
            values: [
                .init("batches", statistics.batches), .init("operations", statistics.operations),
                .init("events", statistics.events), .init("largest_batch", statistics.largestBatch),
                .init("failed_batches", statistics.failedBatches), .init("timed_out_calls", statistics.timedOutCalls),
                .init("queued_operations", statistics.queuedOperations),
                .init("recoveries_admitted", statistics.recoveriesAdmitted),
                .init("recoveries_active", statistics.recoveriesActive),
                .init("recoveries_waiting", statistics.recoveriesWaiting),
                .init("recovery_limit", statistics.recoveryLimit),
            ],
            histograms: [
                .init("write_latency", statistics.writeLatency), .init("commit_duration", statistics.commitDuration),
                .init("recovery_latency", statistics.recoveryLatency),
            ])
    }

    /// Puts this journal's section in `system`'s snapshots, once per system: called at every
    /// durable spawn, it costs one uncontended lock when the system already shows it.
    func appear(in system: ActorSystem) {
        let (known, first) = shownIn.withLock { shown in
            if shown.contains(where: { $0.system === system }) { return (true, false) }
            let first = shown.isEmpty
            shown.removeAll { $0.system == nil }
            shown.append(WeakSystem(system: system))
            return (false, first)
        }
        if known { return }
        if first { Journal.registerLive(self) }
        system.provideSnapshotSection(key: ObjectIdentifier(self)) { [weak self] in self?.snapshotSection }
    }
}

/// The store did not answer a commit or read within ``Journal/Settings/storeTimeout``.
public struct StoreTimedOut: Error, Sendable, CustomStringConvertible {
    /// How long the journal waited.
    public let after: Duration

    public var description: String {
        "the store did not answer within \(after) (a write may still be stored: a restarted actor sees it if it is)"
    }
}

/// Which came first for one batch handed to a ``CallbackCommittingStore``: the call returning,
/// or the completion. Whichever comes second runs the loop on.
private final class InlineCheck: Sendable {
    /// 0: neither yet; 1: the call returned; 2: the completion ran. Acquiring-and-releasing
    /// exchanges: the side that comes second sees what the first did before it.
    private let state = Atomic<UInt8>(0)

    /// In the completion: true if the call has returned (the completion runs the loop on).
    func calledBack() -> Bool {
        !state.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged
    }

    /// After the call: true if the completion is still to come (it runs the loop on).
    func returned() -> Bool {
        state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged
    }
}
