import SQLiteNIO
import Testing
import Troupe
import TroupePersistence
import TroupePersistenceSQLite
import TroupeTestSupport
internal import TroupeLocks

/// A ledger whose events are tagged: every event "ledger", its account's tag, and "large" from
/// 100 on; an amount of -1 gives an invalid (empty) tag.
struct TaggedLedger: EventSourcedActor {
    enum Command: Sendable { case credit([Int], Reply<Int>) }
    enum Event: Codable, Sendable { case credited(Int) }

    let persistenceID: PersistenceID
    var emptyState: Int { 0 }
    static let eventCodec = PersistenceCodec<Event>.json(typeName: "ledger-event")

    func handle(_ command: Command, state: Int, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .credit(let amounts, let reply): .persist(amounts.map { .credited($0) }).thenReply(reply) { $0 }
        }
    }

    func apply(_ event: Event, to state: inout Int) {
        if case .credited(let amount) = event { state += amount }
    }

    func tags(for event: Event) -> Set<String> {
        guard case .credited(let amount) = event else { return [] }
        if amount == -1 { return [""] }
        return amount >= 100 ? ["ledger", persistenceID.rawValue, "large"] : ["ledger", persistenceID.rawValue]
    }
}

/// The read side: events by tag, in the order the store made them visible, resumable from an
/// offset, followed as new ones are stored; on every store.
@Suite struct EventsByTagTests {
    static func amount(_ event: TaggedEvent) throws -> Int {
        let decoded = try TaggedLedger.eventCodec.decode(event.event.event)
        guard case .credited(let amount) = decoded else { return -1 }
        return amount
    }

    /// Follows `tag` after `offset` until `count` events have come (failing after 20 s), then
    /// checks that no further one is stored. (Following, not one read: on PostgreSQL a read
    /// returns nothing behind a transaction still open anywhere on the server, such as another
    /// suite's, until it ends.)
    static func readAll<Store: EventsByTagQuery>(
        _ store: Store, _ tag: String, after offset: EventOffset = .start, pageSize: Int = 256, expecting count: Int
    ) async throws -> [TaggedEvent] {
        let events = try await readFirst(count, of: store, tag, after: offset, pageSize: pageSize)
        let beyond = try await store.events(tagged: tag, after: events.last?.offset ?? offset, limit: 10)
        #expect(beyond.isEmpty, "no event tagged \(tag) beyond the \(count) expected")
        return events
    }

    /// The first `count` events tagged `tag` after `offset`, read `pageSize` at a time (failing
    /// after 20 s without them); then stops reading.
    static func readFirst<Store: EventsByTagQuery>(
        _ count: Int, of store: Store, _ tag: String, after offset: EventOffset = .start, pageSize: Int
    ) async throws -> [TaggedEvent] {
        let read = try await withThrowingTaskGroup(of: [TaggedEvent]?.self) { group in
            group.addTask {
                var read: [TaggedEvent] = []
                if count == 0 { return read }
                for try await event in store.eventsByTag(
                    tag, after: offset, pollInterval: .milliseconds(20), pageSize: pageSize)
                {
                    read.append(event)
                    if read.count == count { break }
                }
                return read
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(20))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        return try #require(read, "\(count) events tagged \(tag) within 20 s")
    }

    static func query(_ store: any PersistenceStore) throws -> any EventsByTagQuery {
        try #require(store as? any EventsByTagQuery, "\(type(of: store)) answers queries by tag")
    }

    @Test(arguments: StoreKind.available) func taggedEventsAreFoundByTagInEachActorsOrder(kind: StoreKind) async throws
    {
        try await withDurableRig(kind) { system, journal, store async throws in
            let ledgers = (0..<3).map {
                system.spawn(persistent: TaggedLedger(persistenceID: PersistenceID("ledger-\($0)")), journal: journal)
            }
            // Interleaved writes from three actors, single and multi-event.
            for round in 0..<10 {
                for (index, ledger) in ledgers.enumerated() {
                    let amounts = round % 3 == 0 ? [round * 10 + index, 100 + round] : [round * 10 + index]
                    _ = try await ledger.ask { .credit(amounts, $0) }
                }
            }
            let queries = try Self.query(store)
            let all = try await Self.readAll(queries, "ledger", expecting: 3 * 10 + 3 * 4)
            // Offsets strictly grow; each actor's events come in its own order, with its numbers.
            #expect(zip(all, all.dropFirst()).allSatisfy { $0.offset < $1.offset })
            for index in 0..<3 {
                let own = all.filter { $0.event.persistenceID == PersistenceID("ledger-\(index)") }
                #expect(own.map(\.event.sequenceNumber) == Array(1...Int64(own.count)))
                #expect(own.allSatisfy { $0.tag == "ledger" })
            }
            // Tags come back with the events, sorted, and the narrower tags select their events.
            let large = try await Self.readAll(queries, "large", expecting: 12)
            #expect(try large.allSatisfy { try Self.amount($0) >= 100 })
            #expect(
                large.allSatisfy { $0.event.event.tags.contains("large") && $0.event.event.tags.contains("ledger") })
            _ = try await Self.readAll(queries, "ledger-1", expecting: 14)
            _ = try await Self.readAll(queries, "no-such-tag", expecting: 0)
            // Recovery reads the tags too.
            let history = try await store.history(of: "ledger-2")
            #expect(
                history.events.map(\.event.tags).prefix(2) == [
                    ["ledger", "ledger-2"], ["large", "ledger", "ledger-2"],
                ])
        }
    }

    @Test(arguments: StoreKind.available) func aReaderResumesAfterItsOffsetMissingNothingAndRepeatingNothing(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let ledger = system.spawn(persistent: TaggedLedger(persistenceID: "resume"), journal: journal)
            for amount in 1...25 { _ = try await ledger.ask { .credit([amount], $0) } }
            let queries = try Self.query(store)
            // Pages of 4; stop after 10 events, keep the offset as text, resume from it.
            let firstPart = try await Self.readFirst(10, of: queries, "resume", pageSize: 4)
            let kept = try #require(firstPart.last).offset.description
            let resumeAt = try #require(EventOffset(kept))
            let rest = try await Self.readAll(queries, "resume", after: resumeAt, pageSize: 7, expecting: 15)
            #expect(try (firstPart + rest).map(Self.amount) == Array(1...25))
            #expect(EventOffset("nonsense") == nil)
        }
    }

    @Test(arguments: StoreKind.available) func aFollowerSeesNewEventsAsTheyAreStoredAndEndsWhenCancelled(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let ledger = system.spawn(persistent: TaggedLedger(persistenceID: "follow"), journal: journal)
            _ = try await ledger.ask { .credit([1], $0) }
            let seen = TestLock<[Int]>([])
            let finished = TestLock(false)
            let queries = try Self.query(store)
            // A poll interval longer than the test's wait: only the store's notifier can wake the
            // follower in time (the in-memory and SQLite stores signal their own commits,
            // PostgreSQL its server's notifications).
            let follower = Task {
                try await Self.follow(queries, "follow", pollInterval: .seconds(60)) { amount in
                    seen.withLock { $0.append(amount) }
                }
                finished.withLock { $0 = true }
            }
            await waitUntil(timeout: .seconds(20), "the stored event") { seen.withLock { $0 } == [1] }
            for amount in 2...5 {
                _ = try await ledger.ask { .credit([amount], $0) }
                await waitUntil(timeout: .seconds(20), "event \(amount) followed") {
                    seen.withLock { $0.last } == amount
                }
            }
            #expect(seen.withLock { $0 } == [1, 2, 3, 4, 5])
            follower.cancel()
            try await follower.value
            #expect(finished.withLock { $0 })
        }
    }

    static func follow<Store: EventsByTagQuery>(
        _ store: Store, _ tag: String, pollInterval: Duration, _ body: (Int) -> Void
    ) async throws {
        for try await event in store.eventsByTag(tag, pollInterval: pollInterval) { body(try amount(event)) }
    }

    @Test(arguments: StoreKind.available) func anInvalidTagFailsTheWriteWithATypedErrorAndStoresNothing(
        kind: StoreKind
    ) async throws {
        try await withDurableRig(kind) { system, journal, store async throws in
            let ledger = system.spawn(persistent: TaggedLedger(persistenceID: "bad-tag"), journal: journal)
            _ = try await ledger.ask { .credit([5], $0) }
            let failure = await askFailure { try await ledger.ask { .credit([7, -1], $0) } }
            let error = try #require(failure?.rootCause as? PersistenceError, "\(String(describing: failure))")
            guard case .invalidTag(let id, let tag, let reason) = error else {
                Issue.record("the ask fails with PersistenceError.invalidTag, not \(error)")
                return
            }
            #expect(id == "bad-tag" && tag == "" && reason.contains("not empty"))
            // Neither event of the refused command was stored.
            #expect(try await store.history(of: "bad-tag").events.count == 1)
        }
    }

    /// A file of schema version 1 (no tags) opens as version 2: its events read as before, and
    /// tagged events are written and found after the migration.
    @Test func aVersion1SQLiteFileIsMigratedAndKeepsItsEvents() async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/old.sqlite"
        let old = SerializedEvent(typeName: "e", version: 1, payload: [1])
        do {
            let store = try await SQLiteStore.open(path: path)
            _ = try await store.commit([.claimWriter("old")])
            _ = try await store.commit([
                .append(EventAppend(persistenceID: "old", epoch: WriterEpoch(1), firstSequenceNumber: 1, events: [old]))
            ])
            try await store.close()
            // Version 2's additions taken out again: the layout version 1 wrote.
            let connection = try await SQLiteConnection.open(storage: .file(path: path))
            for statement in [
                "DROP TRIGGER troupe_events_tags", "DROP TABLE troupe_event_tags",
                "DROP TABLE troupe_projection_offsets", "DROP TABLE troupe_reminders",
                "ALTER TABLE troupe_events DROP COLUMN tags", "UPDATE troupe_schema SET version = 1",
            ] {
                _ = try await connection.query(statement)
            }
            try await connection.close()
        }
        let store = try await SQLiteStore.open(path: path)
        #expect(try await store.history(of: "old").events.map(\.event) == [old])
        _ = try await store.commit([.claimWriter("old")])
        let tagged = SerializedEvent(typeName: "e", version: 1, payload: [2], tags: ["t"])
        let outcome = try await store.commit([
            .append(EventAppend(persistenceID: "old", epoch: WriterEpoch(2), firstSequenceNumber: 2, events: [tagged]))
        ])
        #expect(outcome == [.written])
        let found = try await store.events(tagged: "t", after: .start, limit: 10)
        #expect(found.map(\.event.sequenceNumber) == [2])
        try await store.close()
    }

    @Test func tagsAreValidatedAndStoredAsJSONThatReadsBack() {
        #expect(SerializedEvent.problem(withTag: "orders") == nil)
        #expect(SerializedEvent.problem(withTag: "") != nil)
        #expect(SerializedEvent.problem(withTag: "a\nb") != nil)
        #expect(SerializedEvent.problem(withTag: String(repeating: "é", count: 129)) != nil)  // 258 bytes
        #expect(SerializedEvent.problem(withTag: String(repeating: "é", count: 128)) == nil)
        let awkward = ["plain", "with \"quotes\"", "back\\slash", "ünïcødé ✓", "[,]"]
        let text = StoredTags.encode(awkward.sorted())
        #expect(StoredTags.decode(text) == awkward.sorted())
        #expect(StoredTags.encode([]) == nil)
        #expect(StoredTags.decode(nil) == [])
        for malformed in ["[", "[\"a\"", "[\"a\",]", "[a]", "[\"a\"]x", "[\"a\\n\"]"] {
            #expect(StoredTags.decode(malformed) == nil, "\(malformed) is refused")
        }
    }
}
