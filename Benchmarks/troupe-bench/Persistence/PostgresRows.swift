// `troupe-bench persistence --store postgres`: the parts that need postgres-nio, compiled with
// the package's PostgreSQL trait (on by default; CI's quick runs build without it).

#if PostgreSQL
    import Logging
    import NIOCore
    import PostgresNIO
    import Troupe
    import TroupePersistence
    import TroupePersistencePostgres

    extension PostgresBenchServer {
        func configuration(database: String) -> PostgresClient.Configuration {
            PostgresClient.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: .disable)
        }

        /// Runs `body` with a client on `database` (for administration and the raw baseline).
        func withClient<T: Sendable>(
            database: String, _ body: @Sendable (PostgresClient) async throws -> T
        ) async throws -> T {
            let client = PostgresClient(
                configuration: configuration(database: database), backgroundLogger: Logger(label: "bench"))
            return try await withThrowingTaskGroup(of: T?.self) { group in
                // As PostgresStore.connect does: wait until the runner is about to enter `run()`, so
                // that the first query does not lease before it (postgres-nio warns then).
                await withCheckedContinuation { (entering: CheckedContinuation<Void, Never>) in
                    group.addTask {
                        entering.resume()
                        await client.run()
                        return nil
                    }
                }
                let result = try await body(client)
                group.cancelAll()
                return result
            }
        }

        func createDatabase() async throws -> String {
            let name = "troupe_bench_\(UInt64.random(in: 0...UInt64.max))"
            _ = try await withClient(database: database) {
                try await $0.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
            }
            return name
        }

        func dropDatabase(_ name: String) async throws {
            _ = try await withClient(database: database) {
                try await $0.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
            }
        }

        /// A rig on a fresh database of this server, dropped when the rig closes.
        func openRig(system: ActorSystem, executor: (any TaskExecutor)?) async throws -> Rig {
            let database = try await createDatabase()
            let store = try await PostgresStore.connect(configuration(database: database))
            return Rig(system: system, store: store, journal: Journal(store: store, executor: executor)) {
                store.close()
                try await dropDatabase(database)
            }
        }
    }

    /// postgres-nio alone: the same rows, `batch` events per INSERT … SELECT FROM unnest(…) (one
    /// statement, its own transaction), as fast as one connection goes.
    func rawPostgresInserts(_ options: PersistenceBenchOptions, events: Int, batch: Int) async throws -> PersistenceRow
    {
        guard let server = options.postgres else { preconditionFailure("no PostgreSQL server") }
        let database = try await server.createDatabase()
        let elapsed = try await server.withClient(database: database) { client in
            try await client.query(
                """
                CREATE TABLE events (persistence_id TEXT NOT NULL, sequence_nr BIGINT NOT NULL, writer_epoch BIGINT NOT NULL,
                type_name TEXT NOT NULL, type_version INT NOT NULL, payload BYTEA NOT NULL,
                written_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (persistence_id, sequence_nr))
                """)
            let start = now()
            var written = 0
            var sequence: Int64 = 0
            while written < events {
                let count = min(batch, events - written)
                var ids: [String] = []
                var numbers: [Int64] = []
                for index in 0..<count {
                    let actor = (written + index) % 10_000
                    if actor == 0 { sequence += 1 }
                    ids.append("ledger-\(actor)")
                    numbers.append(sequence)
                }
                let epochs = [Int64](repeating: 1, count: count)
                let types = [String](repeating: "blob", count: count)
                let versions = [Int32](repeating: 1, count: count)
                let payloads = [ByteBuffer](repeating: ByteBuffer(bytes: eventBytes), count: count)
                try await client.query(
                    """
                    INSERT INTO events (persistence_id, sequence_nr, writer_epoch, type_name, type_version, payload)
                    SELECT * FROM unnest(\(ids)::text[], \(numbers)::int8[], \(epochs)::int8[], \(types)::text[],
                        \(versions)::int4[], \(payloads)::bytea[])
                    """)
                written += count
            }
            return seconds(since: start)
        }
        try await server.dropDatabase(database)
        return PersistenceRow(
            name: "raw postgres-nio, same batches",
            note:
                "postgres-nio alone on one connection: the same 100-byte rows, \(batch) per INSERT … SELECT FROM unnest "
                + "(the journal's average batch above; no trigger, no epoch table); the physical limit for this store here",
            events: events, seconds: elapsed)
    }
#endif
