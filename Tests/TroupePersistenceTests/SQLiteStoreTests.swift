#if canImport(Glibc)
    import Glibc
#endif
import SQLiteNIO
import Testing
import Troupe
import TroupePersistence
@testable import TroupePersistenceSQLite
import TroupeTestSupport

/// What only the SQLite store does: a file that outlives the store, and the typed errors for a
/// file it cannot use.
@Suite struct SQLiteStoreTests {
    @Test func eventsSurviveClosingAndReopeningTheFile() async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/events.sqlite"
        do {
            let store = try await SQLiteStore.open(path: path, synchronous: .full)
            let system = makeTestSystem()
            let journal = Journal(store: store)
            let account = system.spawn(persistent: Account(persistenceID: "kept"), journal: journal)
            for amount in 1...20 { _ = try await account.ask { .deposit(amount, $0) } }
            await system.shutdown()
            await journal.shutdown()
            try await store.close()
        }
        let store = try await SQLiteStore.open(path: path)
        let system = makeTestSystem()
        let journal = Journal(store: store)
        let account = system.spawn(persistent: Account(persistenceID: "kept"), journal: journal)
        #expect(try await account.ask { .balance($0) } == 210)
        await system.shutdown()
        await journal.shutdown()
        try await store.close()
    }

    @Test func aFileThatIsNotADatabaseIsATypedErrorAtOpen() async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/garbage.sqlite"
        let garbage = Array(repeating: UInt8(0x5A), count: 8_192)
        let file = fopen(path, "w")
        fwrite(garbage, 1, garbage.count, file)
        fclose(file)
        await #expect {
            _ = try await SQLiteStore.open(path: path)
        } throws: { error in
            guard case .cannotOpen(let failedPath, _) = error as? SQLiteStoreError else { return false }
            return failedPath == path
        }
    }

    @Test func aSchemaFromANewerBuildIsRefused() async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/newer.sqlite"
        try await SQLiteStore.open(path: path).close()
        // What a newer build would leave behind.
        try await SQLiteTestAccess.execute("UPDATE troupe_schema SET version = 99", path: path)
        await #expect {
            _ = try await SQLiteStore.open(path: path)
        } throws: { error in
            guard case .schemaTooNew(_, let found, let supported) = error as? SQLiteStoreError else { return false }
            return found == 99 && supported == SQLiteStore.schemaVersion
        }
    }

    /// A version-2 file (its checks refused with ABORT) opens as the current version: the
    /// checks are replaced, and they still refuse a stale writer, a gap and a duplicate one by
    /// one while the rest of the batch is stored.
    @Test func aVersion2FileIsMigratedAndStillRefusesWhatItMust() async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/v2.sqlite"
        do {
            let store = try await SQLiteStore.open(path: path)
            _ = try await store.commit([
                .claimWriter("a"), .claimWriter("b"), Self.append("a", epoch: 1, from: 1, count: 2),
            ])
            try await store.close()
        }
        // Version 2's triggers, as that build created them.
        try await SQLiteTestAccess.execute(
            "DROP TRIGGER troupe_events_one_writer", "DROP TRIGGER troupe_events_no_gap",
            """
            CREATE TRIGGER troupe_events_one_writer BEFORE INSERT ON troupe_events
            WHEN NEW.writer_epoch IS NOT (SELECT epoch FROM troupe_writers WHERE persistence_id = NEW.persistence_id)
            BEGIN SELECT RAISE(ABORT, 'troupe: stale writer epoch'); END
            """,
            """
            CREATE TRIGGER troupe_events_no_gap BEFORE INSERT ON troupe_events
            WHEN NEW.sequence_nr > 1 AND NOT EXISTS (SELECT 1 FROM troupe_events
                WHERE persistence_id = NEW.persistence_id AND sequence_nr = NEW.sequence_nr - 1)
            BEGIN SELECT RAISE(ABORT, 'troupe: sequence gap'); END
            """,
            "DROP TABLE troupe_reminders",  // version 4's
            "UPDATE troupe_schema SET version = 2", path: path)

        let store = try await SQLiteStore.open(path: path)
        #expect(
            try await SQLiteTestAccess.strings("SELECT version FROM troupe_schema", path: path)
                == ["\(SQLiteStore.schemaVersion)"])
        // Version 4's reminders table was created by the migration.
        try await store.saveReminder(StoredReminder(kind: "k", key: "a", name: "n", dueAt: 1, periodMilliseconds: 0))
        #expect(try await store.reminders(of: "k", key: "a").count == 1)
        let checks = try await SQLiteTestAccess.strings(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN ('troupe_events_one_writer', 'troupe_events_no_gap')",
            path: path)
        #expect(checks.count == 2 && checks.allSatisfy { $0.contains("RAISE(FAIL") }, "\(checks)")
        let outcomes = try await store.commit([
            Self.append("a", epoch: 0, from: 3, count: 1),  // stale epoch
            Self.append("a", epoch: 1, from: 2, count: 1),  // duplicate
            Self.append("a", epoch: 1, from: 9, count: 2),  // gap
            Self.append("b", epoch: 1, from: 1, count: 3),  // fine
            Self.append("a", epoch: 1, from: 3, count: 2),  // fine
        ])
        #expect(
            outcomes == [
                .fenced(current: WriterEpoch(1)), .sequenceConflict(expected: 3), .sequenceConflict(expected: 3),
                .written, .written,
            ])
        #expect(try await store.history(of: "a").events.map(\.sequenceNumber) == [1, 2, 3, 4])
        #expect(try await store.history(of: "b").events.map(\.sequenceNumber) == [1, 2, 3])
        try await store.close()
    }

    /// The writer stores an append without a savepoint, relying on an identity's events being
    /// 1...n. A file where that no longer holds (a row put there by hand) must not get half an
    /// append: the batch fails whole, nothing of it is stored, and the store goes on.
    @Test func anAppendRefusedAfterItsFirstEventFailsTheWholeBatch() async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/broken.sqlite"
        let store = try await SQLiteStore.open(path: path)
        _ = try await store.commit([
            .claimWriter("a"), .claimWriter("b"), Self.append("a", epoch: 1, from: 1, count: 2),
        ])
        // Event 5 of "a" without 3 and 4, past the gap check.
        try await SQLiteTestAccess.execute(
            "DROP TRIGGER troupe_events_no_gap",
            """
            INSERT INTO troupe_events (persistence_id, sequence_nr, writer_epoch, type_name, type_version, payload, written_at)
            VALUES ('a', 5, 1, 'e', 1, x'05', 0)
            """,
            """
            CREATE TRIGGER troupe_events_no_gap BEFORE INSERT ON troupe_events
            WHEN NEW.sequence_nr > 1 AND NOT EXISTS (SELECT 1 FROM troupe_events
                WHERE persistence_id = NEW.persistence_id AND sequence_nr = NEW.sequence_nr - 1)
            BEGIN SELECT RAISE(FAIL, 'troupe: sequence gap'); END
            """, path: path)
        await #expect {
            _ = try await store.commit([
                Self.append("b", epoch: 1, from: 1, count: 1),
                Self.append("a", epoch: 1, from: 3, count: 3),  // 3 and 4 go in, 5 is a duplicate
            ])
        } throws: { error in
            guard let failure = error as? SQLiteResultError else { return false }
            return failure.description.contains("event 3 of an append to a")
        }
        #expect(try await store.history(of: "a").events.map(\.sequenceNumber) == [1, 2, 5])
        #expect(try await store.history(of: "b").events.isEmpty)
        // The next batch is written.
        #expect(try await store.commit([Self.append("b", epoch: 1, from: 1, count: 1)]) == [.written])
        try await store.close()
    }

    private static func append(_ id: PersistenceID, epoch: Int64, from first: Int64, count: Int) -> JournalOperation {
        .append(
            EventAppend(
                persistenceID: id, epoch: WriterEpoch(epoch), firstSequenceNumber: first,
                events: (0..<count).map {
                    SerializedEvent(typeName: "e", version: 1, payload: [UInt8(first) + UInt8($0)])
                }))
    }

    #if DEBUG
        /// The writer's connection belongs to the thread that opened it (the store's writer
        /// thread); a debug build stops at the first use from any other.
        @Test func theWritersConnectionStopsAUseFromAnotherThread() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let directory = makeTemporaryDirectory()
                let path = directory + "/owned.sqlite"
                try await SQLiteStore.open(path: path).close()
                let thread = NIOThreadPool(numberOfThreads: 1)
                thread.start()
                let connection = try await thread.runIfActive { try UnsafeSQLiteConnection(path: path) }
                try connection.execute("SELECT 1")
            }
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(text.contains("used off its thread"))
        }
    #endif

    @Test func manyActorsShareBatches() async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let store = try await SQLiteStore.open(path: directory + "/batches.sqlite")
        let system = makeTestSystem()
        let journal = Journal(store: store)
        let accounts = (0..<200).map {
            system.spawn(persistent: Account(persistenceID: PersistenceID("many-\($0)")), journal: journal)
        }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for account in accounts {
                group.addTask {
                    var balance = 0
                    for amount in 1...10 { balance = try await account.ask { .deposit(amount, $0) } }
                    return balance
                }
            }
            for try await balance in group { #expect(balance == 55) }
        }
        let statistics = journal.statistics
        #expect(statistics.events == 2_000)
        #expect(
            statistics.batches < statistics.operations, "writes from different actors shared commits: \(statistics)")
        for index in [0, 99, 199] {
            #expect(
                try await store.history(of: PersistenceID("many-\(index)")).events.map(\.sequenceNumber)
                    == Array(1...10))
        }
        await system.shutdown()
        await journal.shutdown()
        try await store.close()
    }

    /// Damage a file can suffer after it was written (a bad copy, a restore from a partial
    /// backup, a disk returning garbage).
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case cutShort, pagesOverwritten
        var testDescription: String { rawValue }

        func inflict(on path: String, size: Int) {
            switch self {
            case .cutShort: _ = truncate(path, off_t(size * 6 / 10))
            case .pagesOverwritten:
                // One 4 KiB page in the middle of the file, over whatever they held.
                let file = fopen(path, "r+")
                fseek(file, (size / 2) & ~4095, SEEK_SET)
                let garbage = (0..<4_096).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
                fwrite(garbage, 1, garbage.count, file)
                fclose(file)
            }
        }
    }

    /// A damaged file must never read as a shorter history: the store refuses to open it, or
    /// every actor either recovers all its events or fails with a typed error, and an ask of it
    /// fails with that error instead of answering from less.
    @Test(arguments: Damage.allCases)
    func aDamagedFileIsAnErrorNeverAShorterHistory(_ damage: Damage) async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/damaged.sqlite"
        let accountCount = 60
        let deposits = 30
        do {
            let store = try await SQLiteStore.open(path: path, synchronous: .full)
            let system = makeTestSystem()
            let journal = Journal(store: store)
            let accounts = (0..<accountCount).map {
                system.spawn(persistent: Account(persistenceID: PersistenceID("cut-\($0)")), journal: journal)
            }
            // One account after the other, so that each history fills pages of its own.
            for account in accounts {
                for _ in 0..<deposits { _ = try await account.ask { .deposit(1, $0) } }
            }
            await system.shutdown()
            await journal.shutdown()
            try await store.close()
        }
        var status = stat()
        #expect(stat(path, &status) == 0)
        let fullSize = Int(status.st_size)
        #expect(fullSize > 64 * 1024, "enough pages that the damage misses some: \(fullSize) bytes")
        damage.inflict(on: path, size: fullSize)

        let store: SQLiteStore
        do {
            store = try await SQLiteStore.open(path: path)
        } catch let error as SQLiteStoreError {
            guard case .cannotOpen(let failedPath, _) = error else {
                Issue.record("a damaged file must fail as cannotOpen, not \(error)")
                return
            }
            #expect(failedPath == path)
            return
        }
        let system = makeTestSystem()
        let journal = Journal(store: store)
        // All at once, so that their reads share batches: a batch with a damaged history in it
        // must not fail the others.
        let answers = await withTaskGroup(of: Result<Int, AskError>.self) { group in
            for index in 0..<accountCount {
                let account = system.spawn(
                    persistent: Account(persistenceID: PersistenceID("cut-\(index)")), journal: journal)
                group.addTask { await account.actorRef.askResult(timeout: .seconds(10)) { .command(.balance($0)) } }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        var recovered = 0
        var failed: [String] = []
        for answer in answers {
            switch answer {
            case .success(let balance):
                #expect(balance == deposits, "an account answered from a shorter history")
                recovered += 1
            case .failure(let error): failed.append(error.description)
            }
        }
        if damage == .pagesOverwritten {
            #expect(recovered >= accountCount / 2, "one damaged page failed the histories beside it too: \(failed)")
        }
        #expect(!failed.isEmpty, "the damage went unnoticed: all \(recovered) accounts answered")
        for reason in failed {
            #expect(reason.contains("recovery failed"), "not a recovery error: \(reason)")
        }
        await system.shutdown()
        await journal.shutdown()
        try? await store.close()
    }
}

extension SQLiteStoreTests {
    /// sqlite-nio's async `close()` gives up in a cancelled task; the store's close must not,
    /// or its connections stay open (and sqlite-nio asserts when they are released unclosed).
    @Test func closingFromACancelledTaskClosesTheConnections() async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let store = try await SQLiteStore.open(path: directory + "/cancelled.sqlite")
        let closing = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            #expect(Task.isCancelled)
            try await store.close()
        }
        try await closing.value
        // Opening the file again for writing works, and the first store is released closed.
        let again = try await SQLiteStore.open(path: directory + "/cancelled.sqlite")
        _ = try await again.commit([.claimWriter("after")])
        try await again.close()
    }
}
