import Logging
import SQLiteNIO
import Testing
import Troupe
import TroupePersistence
import TroupePersistenceSQLite
import TroupeTestSupport

#if !TROUPE_CI_SANITIZER_BUILD
    import PostgresNIO
    import TroupePersistencePostgres
#endif

/// Projections on SQLite and PostgreSQL: a batch's writes (to tables of the store's database)
/// and the projection's offset commit together, so every event is applied once, through
/// failures, restarts and a second run.
@Suite struct ProjectionTests {
    struct Handled: Error {}

    enum Kind: String, CustomStringConvertible, Sendable {
        case sqlite, postgres
        var description: String { rawValue }
        static var available: [Kind] { StoreKind.available.contains(.postgres) ? [.sqlite, .postgres] : [.sqlite] }
    }

    /// Totals per actor: the sum of its amounts and how many events were applied.
    typealias Totals = [String: (sum: Int, applied: Int)]

    @Test(arguments: Kind.available) func everyEventIsAppliedOnceAndARestartGoesOnFromTheOffset(kind: Kind) async throws
    {
        try await Self.withHarness(kind) { harness, system, journal in
            let ledgers = try await Self.ledgers(3, "p", rounds: 1...20, harness, system, journal)
            try await harness.run(named: "totals", batchSize: 7, follow: false)
            var totals = try await harness.totals()
            #expect(totals.mapValues(\.sum) == ["p-0": 210, "p-1": 210, "p-2": 210])
            #expect(totals.values.allSatisfy { $0.applied == 20 })
            #expect(try await harness.offset(named: "totals") == (try await harness.readable()).last?.offset)
            // More events; the next run applies only those.
            for ledger in ledgers { _ = try await ledger.ask { .credit([21, 22], $0) } }
            try await eventually("the new events readable") { try await harness.readable().count == 66 }
            try await harness.run(named: "totals", follow: false)
            totals = try await harness.totals()
            #expect(totals.mapValues(\.sum) == ["p-0": 253, "p-1": 253, "p-2": 253])
            #expect(totals.values.allSatisfy { $0.applied == 22 })
        }
    }

    @Test(arguments: Kind.available) func aFailedBatchIsRolledBackWithItsOffsetAndAppliedOnceOnTheNextRun(
        kind: Kind
    ) async throws {
        try await Self.withHarness(kind) { harness, system, journal in
            _ = try await Self.ledgers(1, "f", rounds: 1...30, harness, system, journal)
            // Batches of 5: the fourth (events 16-20) fails at event 18, after writing 16 and 17.
            await #expect(throws: Handled.self) {
                try await harness.run(named: "totals", batchSize: 5, follow: false, failingAt: 18)
            }
            var totals = try await harness.totals()
            #expect(totals["f-0"]?.applied == 15 && totals["f-0"]?.sum == (1...15).reduce(0, +))
            try await harness.run(named: "totals", batchSize: 5, follow: false)
            totals = try await harness.totals()
            #expect(totals["f-0"]?.applied == 30 && totals["f-0"]?.sum == (1...30).reduce(0, +))
        }
    }

    @Test(arguments: Kind.available) func twoRunsOfOneProjectionApplyEachEventOnce(kind: Kind) async throws {
        try await Self.withHarness(kind) { harness, system, journal in
            _ = try await Self.ledgers(4, "t", rounds: 1...50, harness, system, journal)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask { try await harness.run(named: "totals", batchSize: 3, follow: false) }
                }
                try await group.waitForAll()
            }
            let totals = try await harness.totals()
            #expect(totals.count == 4)
            #expect(totals.values.allSatisfy { $0.applied == 50 && $0.sum == 1_275 })
        }
    }

    @Test(arguments: Kind.available) func aFollowingProjectionAppliesNewEventsAndStopsWhenCancelled(
        kind: Kind
    ) async throws {
        try await Self.withHarness(kind) { harness, system, journal in
            let ledger = system.spawn(persistent: TaggedLedger(persistenceID: "live"), journal: journal)
            // A poll interval longer than the test's wait: the store's notifier must wake the run.
            let projection = Task { try await harness.run(named: "totals", follow: true, pollInterval: .seconds(60)) }
            for amount in 1...5 {
                _ = try await ledger.ask { .credit([amount], $0) }
                try await eventually("event \(amount) applied") {
                    try await harness.totals()["live"]?.applied == amount
                }
            }
            projection.cancel()
            try await projection.value
            #expect(try await harness.totals()["live"]?.sum == 15)
        }
    }

    // MARK: Rigs

    /// `count` ledgers named `prefix-0`…, each credited once per round, once their events are
    /// all readable by tag.
    static func ledgers(
        _ count: Int, _ prefix: String, rounds: ClosedRange<Int>, _ harness: any Harness, _ system: ActorSystem,
        _ journal: Journal
    ) async throws -> [PersistentRef<TaggedLedger.Command>] {
        let ledgers = (0..<count).map {
            system.spawn(persistent: TaggedLedger(persistenceID: PersistenceID("\(prefix)-\($0)")), journal: journal)
        }
        for round in rounds {
            for ledger in ledgers { _ = try await ledger.ask { .credit([round], $0) } }
        }
        try await eventually("every event readable") { try await harness.readable().count == count * rounds.count }
        return ledgers
    }

    /// A store of `kind` with a `totals` table, a system and a journal for `body`.
    static func withHarness(
        _ kind: Kind, _ body: (any Harness, ActorSystem, Journal) async throws -> Void
    ) async throws {
        try await withDurableTestStore(kind == .sqlite ? .sqlite : .postgres) { system, journal, test in
            let harness: any Harness
            #if !TROUPE_CI_SANITIZER_BUILD
                if let postgres = test.store as? PostgresStore, let (server, database) = test.postgresDatabase {
                    harness = try await PostgresHarness(store: postgres, server: server, database: database)
                } else {
                    harness = SQLiteHarness(store: try #require(test.store as? SQLiteStore))
                }
            #else
                harness = SQLiteHarness(store: try #require(test.store as? SQLiteStore))
            #endif
            try await harness.prepare()
            do { try await body(harness, system, journal) } catch {
                await harness.finish()
                throw error
            }
            await harness.finish()
        }
    }

    /// One store's projection as the tests drive it: each event adds its amount to its actor's
    /// row of `totals` (and, with `failingAt`, the event of that number throws after its write).
    protocol Harness: Sendable {
        func prepare() async throws
        func run(
            named name: String, batchSize: Int, follow: Bool, pollInterval: Duration, failingAt: Int64?)
            async throws
        func offset(named name: String) async throws -> EventOffset
        func totals() async throws -> Totals
        /// Every event tagged "ledger" that a reader can take now.
        func readable() async throws -> [TaggedEvent]
        func finish() async
    }

    static func amount(of tagged: TaggedEvent) throws -> Int {
        guard case .credited(let amount) = try TaggedLedger.eventCodec.decode(tagged.event.event) else { return 0 }
        return amount
    }

    struct SQLiteHarness: Harness {
        let store: SQLiteStore

        func prepare() async throws {
            let connection = try await SQLiteConnection.open(storage: .file(path: store.path))
            _ = try await connection.query(
                "CREATE TABLE totals (id TEXT PRIMARY KEY, sum INTEGER NOT NULL, applied INTEGER NOT NULL)")
            try await connection.close()
        }

        func run(
            named name: String, batchSize: Int, follow: Bool, pollInterval: Duration, failingAt: Int64?
        )
            async throws
        {
            try await store.runProjection(
                named: name, tag: "ledger", batchSize: batchSize, follow: follow, pollInterval: pollInterval
            ) { events, connection in
                for tagged in events {
                    _ = try await connection.query(
                        """
                        INSERT INTO totals (id, sum, applied) VALUES (?, ?, 1)
                        ON CONFLICT (id) DO UPDATE SET sum = sum + excluded.sum, applied = applied + 1
                        """,
                        [
                            .text(tagged.event.persistenceID.rawValue),
                            .integer(try ProjectionTests.amount(of: tagged)),
                        ])
                    if tagged.event.sequenceNumber == failingAt { throw Handled() }
                }
            }
        }

        func offset(named name: String) async throws -> EventOffset { try await store.projectionOffset(name) }

        func totals() async throws -> Totals {
            let connection = try await SQLiteConnection.open(storage: .file(path: store.path))
            var totals: Totals = [:]
            do {
                for row in try await connection.query("SELECT id, sum, applied FROM totals") {
                    guard let id = row.column("id")?.string, let sum = row.column("sum")?.integer,
                        let applied = row.column("applied")?.integer
                    else { continue }
                    totals[id] = (sum, applied)
                }
            } catch {
                try? await connection.close()
                throw error
            }
            try await connection.close()
            return totals
        }

        func readable() async throws -> [TaggedEvent] {
            try await store.events(tagged: "ledger", after: .start, limit: 10_000)
        }

        func finish() async {}
    }

    #if !TROUPE_CI_SANITIZER_BUILD
        final class PostgresHarness: Harness {
            let store: PostgresStore
            let client: PostgresClient
            let runner: Task<Void, Never>
            let logger = Logger(label: "test")

            init(store: PostgresStore, server: PostgresTestServer, database: String) async throws {
                self.store = store
                let client = PostgresClient(
                    configuration: server.configuration(database: database), backgroundLogger: Logger(label: "test"))
                self.client = client
                var started: Task<Void, Never>?
                await withCheckedContinuation { (resumeCaller: CheckedContinuation<Void, Never>) in
                    started = Task {
                        resumeCaller.resume()
                        await client.run()
                    }
                }
                runner = try #require(started)
            }

            func prepare() async throws {
                try await client.query(
                    "CREATE TABLE totals (id TEXT PRIMARY KEY, sum BIGINT NOT NULL, applied BIGINT NOT NULL)",
                    logger: logger)
            }

            func run(
                named name: String, batchSize: Int, follow: Bool, pollInterval: Duration, failingAt: Int64?
            )
                async throws
            {
                let logger = logger
                try await store.runProjection(
                    named: name, tag: "ledger", batchSize: batchSize, follow: follow, pollInterval: pollInterval
                ) { events, connection in
                    for tagged in events {
                        let id = tagged.event.persistenceID.rawValue
                        let amount = Int64(try ProjectionTests.amount(of: tagged))
                        try await connection.query(
                            """
                            INSERT INTO totals (id, sum, applied) VALUES (\(id), \(amount), 1)
                            ON CONFLICT (id) DO UPDATE SET sum = totals.sum + excluded.sum, applied = totals.applied + 1
                            """, logger: logger)
                        if tagged.event.sequenceNumber == failingAt { throw Handled() }
                    }
                }
            }

            func offset(named name: String) async throws -> EventOffset { try await store.projectionOffset(name) }

            func totals() async throws -> Totals {
                var totals: Totals = [:]
                for try await (id, sum, applied) in try await client.query(
                    "SELECT id, sum, applied FROM totals", logger: logger
                ).decode((String, Int64, Int64).self) {
                    totals[id] = (Int(sum), Int(applied))
                }
                return totals
            }

            func readable() async throws -> [TaggedEvent] {
                try await store.events(tagged: "ledger", after: .start, limit: 10_000)
            }

            func finish() async { runner.cancel() }
        }
    #endif
}

extension ProjectionTests.Harness {
    func run(
        named name: String, batchSize: Int = 256, follow: Bool, pollInterval: Duration = .milliseconds(250),
        failingAt: Int64? = nil
    ) async throws {
        try await run(
            named: name, batchSize: batchSize, follow: follow, pollInterval: pollInterval, failingAt: failingAt)
    }
}
