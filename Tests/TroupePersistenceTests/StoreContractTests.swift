#if canImport(Glibc)
    import Glibc
#endif
import Testing
import TroupePersistence

/// What every ``PersistenceStore`` must refuse and keep, checked on each one directly.
@Suite struct StoreContractTests {
    static func event(_ n: Int) -> SerializedEvent {
        SerializedEvent(typeName: "e", version: 1, payload: Array("\(n)".utf8))
    }

    static func append(_ id: PersistenceID, epoch: Int64, from first: Int64, count: Int) -> JournalOperation {
        .append(
            EventAppend(
                persistenceID: id, epoch: WriterEpoch(epoch), firstSequenceNumber: first,
                events: (0..<count).map { event(Int(first) + $0) }))
    }

    @Test(arguments: StoreKind.available) func claimsRaiseTheEpochAndReportTheLastEvent(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = test.store
        #expect(try await store.commit([.claimWriter("a")]) == [.claimed(WriterEpoch(1), lastSequenceNumber: 0)])
        #expect(try await store.commit([Self.append("a", epoch: 1, from: 1, count: 3)]) == [.written])
        #expect(try await store.commit([.claimWriter("a")]) == [.claimed(WriterEpoch(2), lastSequenceNumber: 3)])
        await test.close()
    }

    /// An event, a snapshot and a state with no bytes at all are stored as empty, not as
    /// missing, and read back as they were.
    @Test(arguments: StoreKind.available) func emptyPayloadsReadBackEmpty(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = test.store
        let empty = SerializedEvent(typeName: "empty", version: 1, payload: [])
        _ = try await store.commit([.claimWriter("hollow")])
        let append = EventAppend(
            persistenceID: "hollow", epoch: WriterEpoch(1), firstSequenceNumber: 1, events: [empty])
        #expect(try await store.commit([.append(append)]) == [.written])
        #expect(try await store.history(of: "hollow").events.map(\.event) == [empty])
        let outcomes = try await store.commit([
            .saveSnapshot(
                SnapshotWrite(
                    persistenceID: "hollow", epoch: WriterEpoch(1),
                    snapshot: SerializedSnapshot(sequenceNumber: 1, state: empty), keep: 1)),
            .saveState(StateWrite(persistenceID: "hollow", epoch: WriterEpoch(1), expectedRevision: 0, state: empty)),
        ])
        #expect(outcomes == [.written, .written])
        #expect(try await store.history(of: "hollow").snapshot?.state == empty)
        #expect(try await store.durableState(of: "hollow")?.state == empty)
        await test.close()
    }

    /// A recovery storm's batch: hundreds of claims at once, an identity claimed twice among
    /// them, identities with events, with a snapshot past their events, and new ones. Each
    /// answer is the one a claim alone would get, in order.
    @Test(arguments: StoreKind.available) func aBatchOfManyClaimsAnswersEachAsIfAlone(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = test.store
        let ids = (0..<200).map { PersistenceID("storm-\($0)") }
        // Every third identity has 2 events; storm-1 also a snapshot at 7.
        var setup: [JournalOperation] = ids.indices.filter { $0 % 3 == 0 || $0 == 1 }.map { .claimWriter(ids[$0]) }
        setup += ids.indices.filter { $0 % 3 == 0 }.map { Self.append(ids[$0], epoch: 1, from: 1, count: 2) }
        setup.append(
            .saveSnapshot(
                SnapshotWrite(
                    persistenceID: ids[1], epoch: WriterEpoch(1),
                    snapshot: SerializedSnapshot(sequenceNumber: 7, state: Self.event(7)), keep: 1)))
        _ = try await store.commit(setup)

        var claims = ids.map { JournalOperation.claimWriter($0) }
        claims.insert(.claimWriter(ids[3]), at: 100)  // storm-3 again, after its first claim's chunk
        claims.insert(.claimWriter(ids[101]), at: 105)  // storm-101 again, 3 claims after its first
        let outcomes = try await store.commit(claims)
        var expected: [JournalOutcome] = ids.indices.map { index in
            let claimedBefore = index % 3 == 0 || index == 1
            let last: Int64 = index == 1 ? 7 : (index % 3 == 0 ? 2 : 0)
            return .claimed(WriterEpoch(claimedBefore ? 2 : 1), lastSequenceNumber: last)
        }
        expected.insert(.claimed(WriterEpoch(3), lastSequenceNumber: 2), at: 100)
        expected.insert(.claimed(WriterEpoch(2), lastSequenceNumber: 0), at: 105)
        #expect(outcomes == expected)
        // The epochs the claims reported are the ones the store now fences with.
        #expect(
            try await store.commit([Self.append(ids[3], epoch: 2, from: 3, count: 1)]) == [
                .fenced(current: WriterEpoch(3))
            ])
        #expect(try await store.commit([Self.append(ids[3], epoch: 3, from: 3, count: 1)]) == [.written])
        await test.close()
    }

    @Test(arguments: StoreKind.available) func staleEpochsGapsAndDuplicatesAreRefusedOneByOne(
        kind: StoreKind
    ) async throws {
        let test = try await kind.make()
        let store = test.store
        _ = try await store.commit([.claimWriter("a"), .claimWriter("b")])
        _ = try await store.commit([.claimWriter("a")])  // "a" is now at epoch 2
        let outcomes = try await store.commit([
            Self.append("a", epoch: 1, from: 1, count: 1),  // stale epoch
            Self.append("a", epoch: 2, from: 1, count: 2),  // fine
            Self.append("a", epoch: 2, from: 2, count: 1),  // duplicate of event 2
            Self.append("a", epoch: 2, from: 5, count: 1),  // gap
            Self.append("b", epoch: 1, from: 1, count: 1),  // fine, despite the refusals around it
            Self.append("a", epoch: 2, from: 3, count: 1),  // fine: follows the accepted ones
        ])
        #expect(
            outcomes == [
                .fenced(current: WriterEpoch(2)), .written, .sequenceConflict(expected: 3),
                .sequenceConflict(expected: 3),
                .written, .written,
            ])
        let a = try await store.history(of: "a")
        #expect(a.events.map(\.sequenceNumber) == [1, 2, 3])
        #expect(a.events.map(\.event) == [Self.event(1), Self.event(2), Self.event(3)])
        #expect(try await store.history(of: "b").events.count == 1)
        await test.close()
    }

    @Test(arguments: StoreKind.available) func snapshotsKeepTheNewestAndFenceStaleWriters(kind: StoreKind) async throws
    {
        let test = try await kind.make()
        let store = test.store
        _ = try await store.commit([.claimWriter("s"), Self.append("s", epoch: 1, from: 1, count: 9)])
        func snapshot(_ n: Int64, epoch: Int64 = 1) -> JournalOperation {
            .saveSnapshot(
                SnapshotWrite(
                    persistenceID: "s", epoch: WriterEpoch(epoch),
                    snapshot: SerializedSnapshot(sequenceNumber: n, state: Self.event(Int(n) * 100)), keep: 2))
        }
        #expect(
            try await store.commit([snapshot(3), snapshot(6), snapshot(9), snapshot(9, epoch: 0)]).last
                == .fenced(current: WriterEpoch(1)))
        let history = try await store.history(of: "s")
        #expect(history.snapshot == SerializedSnapshot(sequenceNumber: 9, state: Self.event(900)))
        #expect(history.events.isEmpty)
        #expect(history.lastSequenceNumber == 9)
        _ = try await store.commit([Self.append("s", epoch: 1, from: 10, count: 2)])
        #expect(try await store.history(of: "s").events.map(\.sequenceNumber) == [10, 11])
        #expect(try await store.commit([.claimWriter("s")]) == [.claimed(WriterEpoch(2), lastSequenceNumber: 11)])
        await test.close()
    }

    @Test(arguments: StoreKind.available) func manyHistoriesAtOnceMatchEachOneRead(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = test.store
        // 1,030: more than one chunk of a thousand, the second padded (SQLite's lists). On
        // PostgreSQL the one commit below alternates appends and snapshots: before its runs were
        // grouped by kind it held a transaction for 22 s, and the other suites' tag readers
        // (which wait for older transactions server-wide) timed out.
        let ids = (0..<1_030).map { PersistenceID("h-\($0)") }
        _ = try await store.commit(ids.map { .claimWriter($0) })
        var operations: [JournalOperation] = []
        for (index, id) in ids.enumerated() where index % 3 != 0 {  // every third has nothing stored
            operations.append(Self.append(id, epoch: 1, from: 1, count: index % 5 + 1))
            if index % 2 == 0 {
                operations.append(
                    .saveSnapshot(
                        SnapshotWrite(
                            persistenceID: id, epoch: WriterEpoch(1),
                            snapshot: SerializedSnapshot(sequenceNumber: 1, state: Self.event(index)), keep: 1)))
            }
        }
        _ = try await store.commit(operations)
        var alone: [PersistenceID: StoredHistory] = [:]
        for id in ids { alone[id] = try await store.history(of: id) }
        // Every list size, one that fills a padded list exactly, one identity, and a repeat.
        for list in [ids, Array(ids[3..<11]), [ids[4]], [ids[5], ids[6], ids[5]]] {
            let together = try await store.histories(of: list)
            for id in list {
                let batched = together[id] ?? StoredHistory(snapshot: nil, events: [])
                #expect(batched.snapshot == alone[id]?.snapshot, "\(id) in a list of \(list.count)")
                #expect(batched.events == alone[id]?.events, "\(id) in a list of \(list.count)")
            }
            #expect(Set(together.keys).isSubset(of: Set(list)), "only the identities asked for")
        }
        await test.close()
    }

    @Test(arguments: StoreKind.available) func storedVersionsListEveryTypeAndVersion(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = test.store
        let old = SerializedEvent(typeName: "t", version: 1, payload: [1])
        let new = SerializedEvent(typeName: "t", version: 2, payload: [2])
        _ = try await store.commit([
            .claimWriter("v"),
            .append(
                EventAppend(persistenceID: "v", epoch: WriterEpoch(1), firstSequenceNumber: 1, events: [old, new, new])),
        ])
        #expect(
            try await store.storedEventVersions()
                == [StoredTypeVersion(typeName: "t", version: 1), StoredTypeVersion(typeName: "t", version: 2)])
        await test.close()
    }
}

/// CI promises a PostgreSQL server (TROUPE_REQUIRE_POSTGRES=1): its suites must not be
/// skipped there for want of one.
@Suite struct PostgresConfigurationTests {
    @Test func aRequiredServerIsConfigured() {
        if getenv("TROUPE_REQUIRE_POSTGRES").map({ String(cString: $0) }) == "1" {
            #expect(PostgresTestServer.configured != nil, "TROUPE_REQUIRE_POSTGRES=1 but TROUPE_POSTGRES_HOST is unset")
        }
        #expect(StoreKind.available.contains(.sqlite) && StoreKind.available.contains(.memory))
    }
}
