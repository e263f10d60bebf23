#if canImport(Glibc)
    import Glibc
#endif
import Testing
import Troupe
import TroupePersistence
import TroupePersistenceSQLite
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
}
