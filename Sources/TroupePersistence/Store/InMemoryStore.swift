internal import TroupeLocks

/// An ``PersistenceStore`` in this process's memory: for unit tests and examples, never for data
/// that must outlive the process. It enforces the same rules as the database stores (one
/// writer per identity, no gap, no duplicate, each operation all or nothing), so a test that
/// passes on it exercises the same refusals.
public final class InMemoryStore: PersistenceStore {
    struct Entry {
        var epoch: Int64 = 0
        var events: [StoredEvent] = []
        var snapshots: [SerializedSnapshot] = []
        var state: StoredState?
    }

    private let entries = Locked<[PersistenceID: Entry]>([:])

    public init() {}

    public func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        entries.withLock { entries in operations.map { Self.apply($0, to: &entries) } }
    }

    static func apply(_ operation: JournalOperation, to entries: inout [PersistenceID: Entry]) -> JournalOutcome {
        let id = operation.persistenceID
        var entry = entries[id] ?? Entry()
        defer { entries[id] = entry }
        switch operation {
        case .claimWriter:
            entry.epoch += 1
            let last = entry.events.last?.sequenceNumber ?? entry.snapshots.last?.sequenceNumber ?? 0
            return .claimed(WriterEpoch(entry.epoch), lastSequenceNumber: last)
        case .append(let append):
            guard append.epoch.value == entry.epoch else { return .fenced(current: WriterEpoch(entry.epoch)) }
            let expected = (entry.events.last?.sequenceNumber ?? 0) + 1
            guard append.firstSequenceNumber == expected else { return .sequenceConflict(expected: expected) }
            for (offset, event) in append.events.enumerated() {
                entry.events.append(
                    StoredEvent(
                        persistenceID: id, sequenceNumber: append.firstSequenceNumber + Int64(offset), event: event))
            }
            return .written
        case .saveSnapshot(let write):
            guard write.epoch.value == entry.epoch else { return .fenced(current: WriterEpoch(entry.epoch)) }
            entry.snapshots.removeAll { $0.sequenceNumber == write.snapshot.sequenceNumber }
            entry.snapshots.append(write.snapshot)
            entry.snapshots.sort { $0.sequenceNumber < $1.sequenceNumber }
            entry.snapshots.removeFirst(max(0, entry.snapshots.count - write.keep))
            return .written
        case .saveState(let write):
            guard write.epoch.value == entry.epoch else { return .fenced(current: WriterEpoch(entry.epoch)) }
            let current = entry.state?.revision ?? 0
            guard write.expectedRevision == current else { return .revisionConflict(current: current) }
            entry.state = StoredState(revision: current + 1, state: write.state)
            return .written
        }
    }

    public func history(of id: PersistenceID) async throws -> StoredHistory {
        entries.withLock { entries in
            guard let entry = entries[id] else { return StoredHistory(snapshot: nil, events: []) }
            let snapshot = entry.snapshots.last
            let after = snapshot?.sequenceNumber ?? 0
            return StoredHistory(snapshot: snapshot, events: entry.events.filter { $0.sequenceNumber > after })
        }
    }

    public func durableState(of id: PersistenceID) async throws -> StoredState? {
        entries.withLock { $0[id]?.state }
    }

    public func storedEventVersions() async throws -> Set<StoredTypeVersion> {
        entries.withLock { entries in
            Set(
                entries.values.flatMap {
                    $0.events.map { StoredTypeVersion(typeName: $0.event.typeName, version: $0.event.version) }
                })
        }
    }

    /// Every event stored for `id`, snapshots ignored (for tests' assertions).
    public func events(of id: PersistenceID) -> [StoredEvent] {
        entries.withLock { $0[id]?.events ?? [] }
    }

    /// The snapshots kept for `id`, oldest first.
    public func snapshots(of id: PersistenceID) -> [SerializedSnapshot] {
        entries.withLock { $0[id]?.snapshots ?? [] }
    }
}
