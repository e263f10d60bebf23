import TroupePersistence
internal import TroupeLocks

/// A persistence store that crashes where a seed says, for testing what durable actors do
/// when the process dies mid-write.
///
/// What survives a crash is ``disk``, an `InMemoryStore`. The crash comes at one commit,
/// chosen by the seed among the first `withinCommits`, at one of the ``CrashPoint``s; from
/// then on every call throws ``Crashed``, as a dead process answers nothing. A test then
/// "restarts": a fresh system and journal on ``disk`` recover the actors, and the test checks
/// that every acknowledged write is there and that no write is half there.
///
/// ```swift
/// let store = CrashingStore(seed: seed, withinCommits: 20)
/// // … run durable actors on Journal(store: store), record what was acknowledged …
/// let recovered = Journal(store: store.disk)   // the restart
/// ```
public final class CrashingStore: PersistenceStore {
    /// Where in a commit the crash happens.
    public enum CrashPoint: Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Before anything of the batch is stored.
        case beforeWrite
        /// After the whole batch is stored, before anyone hears of it.
        case afterWriteBeforeAcknowledgement
        /// Part way: the batch's first operations are stored, each whole (a store without
        /// transactions across operations).
        case midBatch
        /// While a snapshot is written: the batch is stored except its snapshots.
        case duringSnapshot

        public var description: String {
            switch self {
            case .beforeWrite: "before the write"
            case .afterWriteBeforeAcknowledgement: "after the write, before the acknowledgement"
            case .midBatch: "mid-batch"
            case .duringSnapshot: "during a snapshot"
            }
        }
    }

    /// What every call throws once the store has crashed.
    public struct Crashed: Error, CustomStringConvertible {
        public var description: String { "the store crashed (injected)" }
    }

    /// What survives the crash.
    public let disk: InMemoryStore
    /// The commit (counted from 0) that crashes.
    public let crashingCommit: Int
    /// Where in it.
    public let point: CrashPoint
    /// For ``CrashPoint/midBatch``: the share of the batch's operations stored.
    private let storedShare: Double
    private let state = Locked<(commits: Int, crashed: Bool)>((0, false))

    /// A store that crashes at a commit and point chosen by `seed` among the first
    /// `withinCommits` commits.
    public init(seed: UInt64, withinCommits: Int, disk: InMemoryStore = InMemoryStore()) {
        precondition(withinCommits >= 1, "the crash comes within at least one commit")
        var generator = SeededGenerator(seed: seed)
        crashingCommit = Int.random(in: 0..<withinCommits, using: &generator)
        point = CrashPoint.allCases.randomElement(using: &generator)!
        storedShare = Double.random(in: 0..<1, using: &generator)
        self.disk = disk
    }

    /// Whether the crash has happened.
    public var hasCrashed: Bool { state.withLock { $0.crashed } }

    public func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        let crashesNow = try state.withLock { state -> Bool in
            if state.crashed { throw Crashed() }
            defer { state.commits += 1 }
            guard state.commits == crashingCommit else { return false }
            state.crashed = true
            return true
        }
        guard crashesNow else { return try await disk.commit(operations) }
        switch point {
        case .beforeWrite: break
        case .afterWriteBeforeAcknowledgement: _ = try await disk.commit(operations)
        case .midBatch:
            let stored = Int(Double(operations.count) * storedShare)
            _ = try await disk.commit(Array(operations.prefix(stored)))
        case .duringSnapshot:
            _ = try await disk.commit(
                operations.filter {
                    if case .saveSnapshot = $0 { return false }
                    return true
                })
        }
        throw Crashed()
    }

    public func history(of id: PersistenceID) async throws -> StoredHistory {
        try checkAlive()
        return try await disk.history(of: id)
    }

    public func durableState(of id: PersistenceID) async throws -> StoredState? {
        try checkAlive()
        return try await disk.durableState(of: id)
    }

    public func storedEventVersions() async throws -> Set<StoredTypeVersion> {
        try checkAlive()
        return try await disk.storedEventVersions()
    }

    private func checkAlive() throws {
        if hasCrashed { throw Crashed() }
    }
}
