// Not compiled in CI's sanitizer builds, which leave TroupePersistencePostgres out.
#if !TROUPE_CI_SANITIZER_BUILD
    import Logging
    import PostgresNIO
    import Testing
    import TroupePersistence
    import TroupePersistencePostgres

    /// PostgreSQL numbers tagged events by transaction, and transactions commit in any order: a
    /// reader must not return a later transaction's event while an earlier one, still open, may
    /// yet commit one before it (it would then skip that event for ever).
    @Suite(.enabled(if: PostgresTestServer.configured != nil, "needs a PostgreSQL server (scripts/postgres.sh start)"))
    struct PostgresTagOrderTests {
        @Test func aReaderWaitsForAnOlderOpenTransactionInsteadOfSkippingItsEvents() async throws {
            let server = try #require(PostgresTestServer.configured)
            let database = try await server.createDatabase()
            let store = try await PostgresStore.connect(server.configuration(database: database))
            _ = try await store.commit([.claimWriter("early"), .claimWriter("late")])
            let client = PostgresClient(
                configuration: server.configuration(database: database), backgroundLogger: Logger(label: "test"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                    group.addTask {
                        started.resume()
                        await client.run()
                    }
                }
                try await client.withConnection { connection in
                    try await connection.query("BEGIN", logger: Logger(label: "test"))
                    try await connection.query(
                        """
                        INSERT INTO troupe_events (persistence_id, sequence_nr, writer_epoch, type_name, type_version,
                            payload, tags)
                        VALUES ('early', 1, 1, 'e', 1, '\\x01'::bytea, '["t"]')
                        """, logger: Logger(label: "test"))
                    // A later transaction commits a tagged event while the early one is open.
                    let late = SerializedEvent(typeName: "e", version: 1, payload: [2], tags: ["t"])
                    let outcome = try await store.commit([
                        .append(
                            EventAppend(
                                persistenceID: "late", epoch: WriterEpoch(1), firstSequenceNumber: 1, events: [late]))
                    ])
                    #expect(outcome == [.written])
                    let meanwhile = try await store.events(tagged: "t", after: .start, limit: 10)
                    #expect(meanwhile.isEmpty, "a later transaction's event is held back while an older one is open")
                    try await connection.query("COMMIT", logger: Logger(label: "test"))
                }
                // Both, the early one first, once no older transaction is open on the server
                // (other suites' may be, for a moment).
                var found: [TaggedEvent] = []
                try await eventually("both events readable") {
                    found = try await store.events(tagged: "t", after: .start, limit: 10)
                    return found.count == 2
                }
                #expect(found.map(\.event.persistenceID) == ["early", "late"])
                #expect(found.count == 2 && found[0].offset < found[1].offset)
                group.cancelAll()
            }
            store.close()
            try await server.dropDatabase(database)
        }
    }
#endif
