// Not compiled in CI's sanitizer builds, which leave TroupePersistencePostgres out.
#if !TROUPE_CI_SANITIZER_BUILD
    import Logging
    import PostgresNIO
    import Testing
    import Troupe
    import TroupePersistence
    import TroupePersistencePostgres
    import TroupeTestSupport

    /// Projections on PostgreSQL: a batch's writes and the projection's offset commit together,
    /// so every event is applied once, through failures, restarts and a second run.
    @Suite(.enabled(if: PostgresTestServer.configured != nil, "needs a PostgreSQL server (scripts/postgres.sh start)"))
    struct PostgresProjectionTests {
        struct Handled: Error {}

        /// A store on a database of its own with a `totals` table, a system and a journal.
        static func withProjectionRig(
            _ body: (PostgresStore, ActorSystem, Journal, PostgresClient) async throws -> Void
        ) async throws {
            let server = try #require(PostgresTestServer.configured)
            let database = try await server.createDatabase()
            let store = try await PostgresStore.connect(server.configuration(database: database))
            let client = PostgresClient(
                configuration: server.configuration(database: database), backgroundLogger: Logger(label: "test"))
            let system = makeTestSystem()
            let journal = Journal(store: store)
            try await withThrowingTaskGroup(of: Void.self) { group in
                await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                    group.addTask {
                        started.resume()
                        await client.run()
                    }
                }
                try await client.query(
                    "CREATE TABLE totals (id TEXT PRIMARY KEY, sum BIGINT NOT NULL, applied BIGINT NOT NULL)",
                    logger: Logger(label: "test"))
                do { try await body(store, system, journal, client) } catch {
                    group.cancelAll()
                    await system.shutdown()
                    await journal.shutdown()
                    store.close()
                    throw error
                }
                group.cancelAll()
            }
            await system.shutdown()
            await journal.shutdown()
            store.close()
            try await server.dropDatabase(database)
        }

        /// Adds each event's amount to its actor's row of `totals`, counting the events applied.
        static func addToTotals(_ events: [TaggedEvent], _ connection: PostgresConnection) async throws {
            for tagged in events {
                guard case .credited(let amount) = try TaggedLedger.eventCodec.decode(tagged.event.event) else {
                    continue
                }
                let id = tagged.event.persistenceID.rawValue
                try await connection.query(
                    """
                    INSERT INTO totals (id, sum, applied) VALUES (\(id), \(Int64(amount)), 1)
                    ON CONFLICT (id) DO UPDATE SET sum = totals.sum + excluded.sum, applied = totals.applied + 1
                    """, logger: Logger(label: "test"))
            }
        }

        static func totals(_ client: PostgresClient) async throws -> [String: (sum: Int64, applied: Int64)] {
            var totals: [String: (sum: Int64, applied: Int64)] = [:]
            for try await (id, sum, applied) in try await client.query(
                "SELECT id, sum, applied FROM totals", logger: Logger(label: "test")
            ).decode((String, Int64, Int64).self) {
                totals[id] = (sum, applied)
            }
            return totals
        }

        static func credit(_ ledgers: [PersistentRef<TaggedLedger.Command>], rounds: ClosedRange<Int>) async throws {
            for round in rounds {
                for ledger in ledgers { _ = try await ledger.ask { .credit([round], $0) } }
            }
        }

        /// `count` ledgers named `prefix-0`…, each credited once per round, once their events are
        /// all readable by tag.
        static func ledgers(
            _ count: Int, _ prefix: String, rounds: ClosedRange<Int>, _ store: PostgresStore, _ system: ActorSystem,
            _ journal: Journal
        ) async throws -> [PersistentRef<TaggedLedger.Command>] {
            let ledgers = (0..<count).map {
                system.spawn(
                    persistent: TaggedLedger(persistenceID: PersistenceID("\(prefix)-\($0)")), journal: journal)
            }
            try await credit(ledgers, rounds: rounds)
            try await eventually("every event readable") {
                try await store.events(tagged: "ledger", after: .start, limit: 1_000).count == count * rounds.count
            }
            return ledgers
        }

        @Test func everyEventIsAppliedOnceAndARestartGoesOnFromTheOffset() async throws {
            try await Self.withProjectionRig { store, system, journal, client in
                let ledgers = try await Self.ledgers(3, "p", rounds: 1...20, store, system, journal)
                try await store.runProjection(named: "totals", tag: "ledger", batchSize: 7, follow: false) {
                    try await Self.addToTotals($0, $1)
                }
                var totals = try await Self.totals(client)
                #expect(totals.mapValues(\.sum) == ["p-0": 210, "p-1": 210, "p-2": 210])
                #expect(totals.values.allSatisfy { $0.applied == 20 })
                let offset = try await store.projectionOffset("totals")
                #expect(offset == (try await store.events(tagged: "ledger", after: .start, limit: 100)).last?.offset)

                // More events; the next run applies only those.
                try await Self.credit(ledgers, rounds: 21...25)
                try await eventually("the new events readable") {
                    try await store.events(tagged: "ledger", after: offset, limit: 100).count == 15
                }
                try await store.runProjection(named: "totals", tag: "ledger", follow: false) {
                    try await Self.addToTotals($0, $1)
                }
                totals = try await Self.totals(client)
                #expect(totals.mapValues(\.sum) == ["p-0": 325, "p-1": 325, "p-2": 325])
                #expect(totals.values.allSatisfy { $0.applied == 25 })
            }
        }

        @Test func aFailedBatchIsRolledBackWithItsOffsetAndAppliedOnceOnTheNextRun() async throws {
            try await Self.withProjectionRig { store, system, journal, client in
                _ = try await Self.ledgers(1, "f", rounds: 1...30, store, system, journal)
                // Batches of 5: the fourth (events 16-20) fails at event 18, after writing 16 and 17.
                await #expect(throws: Handled.self) {
                    try await store.runProjection(named: "totals", tag: "ledger", batchSize: 5, follow: false) {
                        events, connection in
                        for tagged in events {
                            try await Self.addToTotals([tagged], connection)
                            if tagged.event.sequenceNumber == 18 { throw Handled() }
                        }
                    }
                }
                var totals = try await Self.totals(client)
                #expect(totals["f-0"]?.applied == 15 && totals["f-0"]?.sum == (1...15).reduce(0, +))
                try await store.runProjection(named: "totals", tag: "ledger", batchSize: 5, follow: false) {
                    try await Self.addToTotals($0, $1)
                }
                totals = try await Self.totals(client)
                #expect(totals["f-0"]?.applied == 30 && totals["f-0"]?.sum == (1...30).reduce(0, +))
            }
        }

        @Test func twoRunsOfOneProjectionApplyEachEventOnce() async throws {
            try await Self.withProjectionRig { store, system, journal, client in
                _ = try await Self.ledgers(4, "t", rounds: 1...50, store, system, journal)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<2 {
                        group.addTask {
                            try await store.runProjection(named: "totals", tag: "ledger", batchSize: 3, follow: false) {
                                try await Self.addToTotals($0, $1)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let totals = try await Self.totals(client)
                #expect(totals.count == 4)
                #expect(totals.values.allSatisfy { $0.applied == 50 && $0.sum == 1_275 })
            }
        }

        @Test func aFollowingProjectionAppliesNewEventsAndStopsWhenCancelled() async throws {
            try await Self.withProjectionRig { store, system, journal, client in
                let ledger = system.spawn(persistent: TaggedLedger(persistenceID: "live"), journal: journal)
                let projection = Task {
                    try await store.runProjection(named: "totals", tag: "ledger", pollInterval: .seconds(60)) {
                        try await Self.addToTotals($0, $1)
                    }
                }
                for amount in 1...5 {
                    _ = try await ledger.ask { .credit([amount], $0) }
                    try await eventually("event \(amount) applied") {
                        try await Self.totals(client)["live"]?.applied == Int64(amount)
                    }
                }
                projection.cancel()
                try await projection.value
                #expect(try await Self.totals(client)["live"]?.sum == 15)
            }
        }
    }
#endif
