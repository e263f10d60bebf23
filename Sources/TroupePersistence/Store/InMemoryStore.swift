internal import TroupeLocks

/// An ``PersistenceStore`` in this process's memory: for unit tests and examples, never for data
/// that must outlive the process. It enforces the same rules as the database stores (one
/// writer per identity, no gap, no duplicate, each operation all or nothing), so a test that
/// passes on it exercises the same refusals.
public final class InMemoryStore: PersistenceStore, EventsByTagQuery, ReminderStore {
    struct Entry {
        var epoch: Int64 = 0
        var events: [StoredEvent] = []
        var snapshots: [SerializedSnapshot] = []
        var state: StoredState?
    }

    struct Contents {
        var entries: [PersistenceID: Entry] = [:]
        /// Every tagged event, by tag, in the order stored; an offset's position is its index
        /// in `tagged` plus one.
        var tagged: [(tag: String, event: StoredEvent)] = []
        var taggedByTag: [String: [Int]] = [:]
    }

    private let contents = Locked(Contents())
    /// The reminders (InMemoryStore+Reminders), by kind, key and name.
    let reminderRows = Locked([ReminderRowKey: StoredReminder]())
    public let eventNotifier: EventNotifier? = EventNotifier()

    public init() {}

    public func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        commitNow(operations)
    }

    /// The commit, on the caller's thread (what tests' stores that call back build on).
    func commitNow(_ operations: [JournalOperation]) -> [JournalOutcome] {
        let (outcomes, taggedCount) = contents.withLock { contents in
            let before = contents.tagged.count
            let outcomes = operations.map { Self.apply($0, to: &contents) }
            return (outcomes, contents.tagged.count - before)
        }
        if taggedCount > 0 { eventNotifier?.signal() }
        return outcomes
    }

    static func apply(_ operation: JournalOperation, to contents: inout Contents) -> JournalOutcome {
        let outcome = apply(operation, to: &contents.entries)
        if case .append(let append) = operation, outcome == .written {
            for (index, event) in append.events.enumerated() where !event.tags.isEmpty {
                let stored = StoredEvent(
                    persistenceID: append.persistenceID, sequenceNumber: append.firstSequenceNumber + Int64(index),
                    event: event)
                for tag in event.tags {
                    contents.taggedByTag[tag, default: []].append(contents.tagged.count)
                    contents.tagged.append((tag, stored))
                }
            }
        }
        return outcome
    }

    static func apply(_ operation: JournalOperation, to entries: inout [PersistenceID: Entry]) -> JournalOutcome {
        let id = operation.persistenceID
        // Taken out of the dictionary while it changes: a copy left behind would make every
        // append copy the identity's whole history (quadratic in its length).
        var entry = entries.removeValue(forKey: id) ?? Entry()
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
        contents.withLock { contents in
            guard let entry = contents.entries[id] else { return StoredHistory(snapshot: nil, events: []) }
            let snapshot = entry.snapshots.last
            let after = snapshot?.sequenceNumber ?? 0
            return StoredHistory(snapshot: snapshot, events: entry.events.filter { $0.sequenceNumber > after })
        }
    }

    public func durableState(of id: PersistenceID) async throws -> StoredState? {
        contents.withLock { $0.entries[id]?.state }
    }

    public func storedEventVersions() async throws -> Set<StoredTypeVersion> {
        contents.withLock { contents in
            Set(
                contents.entries.values.flatMap {
                    $0.events.map { StoredTypeVersion(typeName: $0.event.typeName, version: $0.event.version) }
                })
        }
    }

    public func events(tagged tag: String, after offset: EventOffset, limit: Int) async throws -> [TaggedEvent] {
        contents.withLock { contents in
            guard let indices = contents.taggedByTag[tag] else { return [] }
            // Positions are indices + 1, ascending: the first after `offset` by binary search.
            var low = 0
            var high = indices.count
            while low < high {
                let middle = (low + high) / 2
                if Int64(indices[middle] + 1) <= offset.position { low = middle + 1 } else { high = middle }
            }
            return indices[low..<min(indices.count, low + max(0, limit))].map { index in
                TaggedEvent(
                    offset: EventOffset(position: Int64(index + 1)), tag: tag, event: contents.tagged[index].event)
            }
        }
    }

    /// Every event stored for `id`, snapshots ignored (for tests' assertions).
    public func events(of id: PersistenceID) -> [StoredEvent] {
        contents.withLock { $0.entries[id]?.events ?? [] }
    }

    /// The snapshots kept for `id`, oldest first.
    public func snapshots(of id: PersistenceID) -> [SerializedSnapshot] {
        contents.withLock { $0.entries[id]?.snapshots ?? [] }
    }
}
