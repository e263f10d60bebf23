/// Where events and snapshots live: SQLite (`TroupePersistenceSQLite`), PostgreSQL, memory
/// (``InMemoryStore``), or your own.
///
/// A store does two things. ``commit(_:)`` applies a batch of operations from many actors in
/// one transaction (a ``Journal`` gathers them: group commit); ``history(of:)`` reads one
/// actor's latest snapshot and the events after it. The store enforces the two invariants a
/// durable actor relies on, inside the write, so that no interleaving can break them:
///
/// - **One writer.** ``JournalOperation/claimWriter(_:)`` raises the identity's epoch; an
///   append or snapshot carrying an older epoch is refused with ``JournalOutcome/fenced(current:)``.
/// - **No gap, no duplicate.** An append's first sequence number must follow the last stored
///   one; otherwise it is refused with ``JournalOutcome/sequenceConflict(expected:)``.
/// - **Compare-and-set.** A durable state is saved only over the revision its writer read;
///   otherwise it is refused with ``JournalOutcome/revisionConflict(current:)``.
///
/// Each operation is all or nothing (an append of three events stores three or none), and a
/// refused operation does not stop the others in the batch. A batch that cannot be applied at
/// all (the disk is full, the connection dropped) throws, and then none of it was applied.
public protocol PersistenceStore: Sendable {
    /// Applies `operations` in order, in one transaction where the store has them, and returns
    /// one outcome per operation, in the same order. Throws when nothing was applied.
    func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome]

    /// The latest snapshot of `id` (if any) and every event after it, in order.
    func history(of id: PersistenceID) async throws -> StoredHistory

    /// The histories of many identities at once (what recoveries that start together need);
    /// identities with nothing stored may be absent. The default asks ``history(of:)`` for each.
    func histories(of ids: [PersistenceID]) async throws -> [PersistenceID: StoredHistory]

    /// The durable state of `id` and its revision, or nil if none was ever saved.
    func durableState(of id: PersistenceID) async throws -> StoredState?

    /// The distinct event types and versions stored (for checking, at start, that every old
    /// version can still be read: see ``PersistenceCodec/check(storedVersions:)``).
    func storedEventVersions() async throws -> Set<StoredTypeVersion>
}

extension PersistenceStore {
    public func histories(of ids: [PersistenceID]) async throws -> [PersistenceID: StoredHistory] {
        var histories: [PersistenceID: StoredHistory] = [:]
        for id in ids { histories[id] = try await history(of: id) }
        return histories
    }
}

/// One write in a group commit.
public enum JournalOperation: Sendable {
    /// Makes a new incarnation the only writer of `id`; answered with ``JournalOutcome/claimed(_:lastSequenceNumber:)``.
    case claimWriter(PersistenceID)
    /// Appends events to one actor's history, atomically.
    case append(EventAppend)
    /// Stores a snapshot and keeps only the newest `keep` of that identity.
    case saveSnapshot(SnapshotWrite)
    /// Replaces a durable-state actor's whole state if its revision is still the expected one.
    case saveState(StateWrite)

    /// The identity the operation writes.
    public var persistenceID: PersistenceID {
        switch self {
        case .claimWriter(let id): id
        case .append(let append): append.persistenceID
        case .saveSnapshot(let write): write.persistenceID
        case .saveState(let write): write.persistenceID
        }
    }
}

/// Events for one actor, stored together or not at all.
public struct EventAppend: Sendable {
    public var persistenceID: PersistenceID
    /// The writer's epoch, checked against the stored one inside the write.
    public var epoch: WriterEpoch
    /// The number of the first event; the others follow without gaps.
    public var firstSequenceNumber: Int64
    public var events: [SerializedEvent]

    public init(persistenceID: PersistenceID, epoch: WriterEpoch, firstSequenceNumber: Int64, events: [SerializedEvent])
    {
        precondition(!events.isEmpty, "an EventAppend carries at least one event")
        precondition(firstSequenceNumber >= 1, "sequence numbers start at 1")
        self.persistenceID = persistenceID
        self.epoch = epoch
        self.firstSequenceNumber = firstSequenceNumber
        self.events = events
    }

    /// The number of the last event.
    public var lastSequenceNumber: Int64 { firstSequenceNumber + Int64(events.count) - 1 }
}

/// A snapshot to store for one actor.
public struct SnapshotWrite: Sendable {
    public var persistenceID: PersistenceID
    public var epoch: WriterEpoch
    public var snapshot: SerializedSnapshot
    /// How many snapshots of this identity to keep (the newest), at least 1.
    public var keep: Int

    public init(persistenceID: PersistenceID, epoch: WriterEpoch, snapshot: SerializedSnapshot, keep: Int) {
        precondition(keep >= 1, "keep at least one snapshot")
        self.persistenceID = persistenceID
        self.epoch = epoch
        self.snapshot = snapshot
        self.keep = keep
    }
}

/// A durable-state actor's new state: compare-and-set on the revision.
public struct StateWrite: Sendable {
    public var persistenceID: PersistenceID
    public var epoch: WriterEpoch
    /// The revision the writer read (0: no state saved yet); the write is refused if the
    /// stored one differs.
    public var expectedRevision: Int64
    /// The whole state, encoded. It is stored as revision `expectedRevision + 1`.
    public var state: SerializedEvent

    public init(persistenceID: PersistenceID, epoch: WriterEpoch, expectedRevision: Int64, state: SerializedEvent) {
        precondition(expectedRevision >= 0, "revisions start at 0 (nothing saved)")
        self.persistenceID = persistenceID
        self.epoch = epoch
        self.expectedRevision = expectedRevision
        self.state = state
    }
}

/// A durable state as stored.
public struct StoredState: Sendable, Hashable {
    /// How many times it was saved (1 after the first save).
    public var revision: Int64
    public var state: SerializedEvent
    public init(revision: Int64, state: SerializedEvent) {
        self.revision = revision
        self.state = state
    }
}

/// What happened to one operation of a commit.
public enum JournalOutcome: Sendable, Hashable {
    /// The writer was claimed: `epoch` is now the only one accepted, and the history ends at
    /// `lastSequenceNumber` (0: empty).
    case claimed(WriterEpoch, lastSequenceNumber: Int64)
    /// The events (or snapshot) are stored.
    case written
    /// Refused: a newer incarnation has claimed the identity.
    case fenced(current: WriterEpoch)
    /// Refused: the append did not start right after the stored history's last event.
    case sequenceConflict(expected: Int64)
    /// Refused: the stored state is at revision `current`, not the expected one.
    case revisionConflict(current: Int64)
}

/// One actor's history as recovery needs it.
public struct StoredHistory: Sendable {
    public var snapshot: SerializedSnapshot?
    /// The events after the snapshot (all of them without one), in order.
    public var events: [StoredEvent]

    public init(snapshot: SerializedSnapshot?, events: [StoredEvent]) {
        self.snapshot = snapshot
        self.events = events
    }

    /// The number of the last event the history includes (0: empty).
    public var lastSequenceNumber: Int64 { events.last?.sequenceNumber ?? snapshot?.sequenceNumber ?? 0 }
}

/// A type name and layout version found in a store.
public struct StoredTypeVersion: Sendable, Hashable, CustomStringConvertible {
    public var typeName: String
    public var version: Int
    public init(typeName: String, version: Int) {
        self.typeName = typeName
        self.version = version
    }
    public var description: String { "\(typeName) v\(version)" }
}

extension JournalOperation {
    /// Whether the operation stores tagged events (a store then signals its followers).
    package var hasTags: Bool {
        guard case .append(let append) = self else { return false }
        return append.events.contains { !$0.tags.isEmpty }
    }
}
