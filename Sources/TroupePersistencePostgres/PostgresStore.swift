import Logging
import NIOCore
import PostgresNIO
import TroupePersistence
internal import TroupeLocks

/// A `PersistenceStore` on PostgreSQL, through postgres-nio's `PostgresClient`: state that
/// outlives the machine and is shared by every node that connects.
///
/// A `Journal`'s batch of appends is one statement (`INSERT … SELECT FROM unnest(…)`, arrays
/// bound as parameters) in a transaction of its own, so one commit, answered once the `COMMIT`
/// has completed. A statement-level trigger refuses,
/// inside that insert, an event whose writer epoch is not the identity's current one and an event
/// that does not follow its predecessor; the primary key `(persistence_id, sequence_nr)` refuses a
/// duplicate. Claims and appends serialize through advisory locks on stripes of the identities.
/// Tables are prefixed `troupe_` and created or migrated at connect, under an advisory lock so
/// that nodes starting together do not race.
public final class PostgresStore: PersistenceStore, EventsByTagQuery, ReminderStore {
    /// What a commit waits for (PostgreSQL's `synchronous_commit`, set on this store's
    /// connections only).
    public enum SynchronousCommit: String, Sendable, CaseIterable {
        /// The default: a commit returns once its WAL is flushed on the server. A committed
        /// batch survives a crash of the server or of its machine.
        case on
        /// A commit returns before its WAL is flushed: a crash of the server (not of this
        /// process) can lose the batches acknowledged in the last few hundred milliseconds
        /// (three times `wal_writer_delay`); never half a batch, and the database stays
        /// consistent.
        case off
    }

    /// The schema version this build creates and reads (2: events carry tags; 3: reminders).
    public static let schemaVersion = 3

    let client: PostgresClient
    private let runner: Task<Void, Never>
    let logger: Logger
    let notifier = EventNotifier()
    /// The commits in flight on each connection, failed when it closes (`failingOnClose`).
    let closingConnections = ClosingConnections()
    /// Listens for the tag trigger's notifications, from the first use of ``eventNotifier``.
    private let listener = Locked<Task<Void, Never>?>(nil)

    private init(client: PostgresClient, runner: Task<Void, Never>, logger: Logger) {
        self.client = client
        self.runner = runner
        self.logger = logger
    }

    /// Connects with `configuration` (host, port, user, password, database, TLS), creates or
    /// migrates the tables, and returns the store. Throws ``PostgresStoreError`` when the
    /// server cannot be reached or its schema is newer than this build's.
    public static func connect(
        _ configuration: PostgresClient.Configuration, synchronousCommit: SynchronousCommit = .on,
        logger: Logger = Logger(label: "troupe.persistence.postgres")
    ) async throws -> PostgresStore {
        var configuration = configuration
        configuration.options.additionalStartupParameters.append(("synchronous_commit", synchronousCommit.rawValue))
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        // The client's pool runs in `run()`; leasing before `run()` has begun makes postgres-nio
        // log a warning. The runner resumes this caller and goes straight on, without suspending,
        // into `run()`, whose first step marks the client as running; this caller is resumed on
        // another job, after that step in every run seen (the window is a few instructions
        // against a job hand-off).
        var started: Task<Void, Never>?
        await withCheckedContinuation { (resumeCaller: CheckedContinuation<Void, Never>) in
            started = Task {
                resumeCaller.resume()
                await client.run()
            }
        }
        guard let runner = started else { preconditionFailure("the runner task was created above") }
        let store = PostgresStore(client: client, runner: runner, logger: logger)
        do {
            try await store.migrate()
        } catch {
            runner.cancel()
            if let storeError = error as? PostgresStoreError { throw storeError }
            throw PostgresStoreError.cannotConnect(reason: String(reflecting: error))
        }
        return store
    }

    /// Closes the connections; the store cannot be used afterwards.
    public func close() {
        listener.withLock { $0?.cancel() }
        runner.cancel()
    }

    deinit {
        listener.withLock { $0?.cancel() }
        runner.cancel()
    }

    /// Raised when the server notifies that tagged events were committed (by any node): the
    /// tag trigger sends `NOTIFY troupe_events` in the writing transaction, delivered at its
    /// commit. The first use starts listening on a connection of the store's own (a follower
    /// polls meanwhile, and after a lost connection until listening resumes).
    public var eventNotifier: EventNotifier? {
        listener.withLock { listener in
            if listener == nil {
                let (client, notifier, logger) = (client, notifier, logger)
                listener = Task { await Self.listen(client: client, notifier: notifier, logger: logger) }
            }
        }
        return notifier
    }

    private static func listen(client: PostgresClient, notifier: EventNotifier, logger: Logger) async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: "troupe_events") { notifications in
                        // Commits made before this LISTEN took effect were not announced.
                        notifier.signal()
                        for try await _ in notifications { notifier.signal() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.debug("listening for tagged events failed; retrying in 1 s: \(error)")
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    private func migrate() async throws {
        try await client.withTransaction(logger: logger) { connection in
            // One migrator at a time across nodes; released at commit.
            try await connection.query("SELECT pg_advisory_xact_lock(7146893001)", logger: logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS troupe_schema (version INT NOT NULL)", logger: logger)
            var version = 0
            for try await (stored) in try await connection.query("SELECT version FROM troupe_schema", logger: logger)
                .decode(Int.self)
            {
                version = stored
            }
            if version > Self.schemaVersion {
                throw PostgresStoreError.schemaTooNew(found: version, supported: Self.schemaVersion)
            }
            if version < 1 {
                for statement in Self.schemaVersion1 {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            if version < 2 {
                for statement in Self.schemaVersion2 {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            if version < 3 {
                for statement in Self.schemaVersion3 {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
        }
    }

    /// The advisory locks' first key (the second is the stripe), and the number of stripes.
    static let lockNamespace = 7_146_893
    static let stripes = 64

    static let schemaVersion1 = [
        """
        CREATE TABLE troupe_events (
            ordering BIGSERIAL NOT NULL, persistence_id TEXT NOT NULL, sequence_nr BIGINT NOT NULL,
            writer_epoch BIGINT NOT NULL, type_name TEXT NOT NULL, type_version INT NOT NULL, payload BYTEA NOT NULL,
            written_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (persistence_id, sequence_nr))
        """,
        "CREATE TABLE troupe_writers (persistence_id TEXT PRIMARY KEY, epoch BIGINT NOT NULL)",
        """
        CREATE TABLE troupe_snapshots (
            persistence_id TEXT NOT NULL, sequence_nr BIGINT NOT NULL, type_name TEXT NOT NULL, type_version INT NOT NULL,
            payload BYTEA NOT NULL, written_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (persistence_id, sequence_nr))
        """,
        """
        CREATE TABLE troupe_states (
            persistence_id TEXT PRIMARY KEY, revision BIGINT NOT NULL, type_name TEXT NOT NULL, type_version INT NOT NULL,
            payload BYTEA NOT NULL, written_at TIMESTAMPTZ NOT NULL DEFAULT now())
        """,
        // Checked once per statement, on the rows it inserted: their writers' epochs and their
        // predecessors. Appends take shared, and claims exclusive, transaction-scoped advisory
        // locks on the identities' stripes (64, in ascending order, so no two lock in opposite
        // orders): a claim waits for the appends in flight on its stripe, and an append that
        // follows a claim reads its epoch. Advisory locks live in memory: no row is written to
        // lock it.
        """
        CREATE FUNCTION troupe_check_events() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock_shared(\(lockNamespace), stripe) FROM (
                SELECT DISTINCT abs(hashtext(persistence_id)) % \(stripes) AS stripe FROM inserted ORDER BY 1) AS locked;
            IF EXISTS (SELECT 1 FROM inserted i LEFT JOIN troupe_writers w USING (persistence_id)
                       WHERE w.epoch IS DISTINCT FROM i.writer_epoch) THEN
                RAISE EXCEPTION 'troupe: stale writer epoch' USING ERRCODE = 'TRP01';
            END IF;
            IF EXISTS (SELECT 1 FROM inserted i WHERE i.sequence_nr > 1 AND NOT EXISTS (SELECT 1 FROM troupe_events e
                       WHERE e.persistence_id = i.persistence_id AND e.sequence_nr = i.sequence_nr - 1)) THEN
                RAISE EXCEPTION 'troupe: sequence gap' USING ERRCODE = 'TRP02';
            END IF;
            RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER troupe_events_check AFTER INSERT ON troupe_events REFERENCING NEW TABLE AS inserted
        FOR EACH STATEMENT EXECUTE FUNCTION troupe_check_events()
        """,
        "DELETE FROM troupe_schema",
        "INSERT INTO troupe_schema (version) VALUES (1)",
    ]

    /// Tags. The trigger indexes an insert's tags in the same statement (a tag row exists
    /// exactly when its event does), numbered in the writing transaction (`tx_id`) and in
    /// insertion order within it; a reader takes only rows of transactions older than every
    /// open one (`pg_snapshot_xmin`), so no later commit can add a row before its offset.
    static let schemaVersion2 = [
        "ALTER TABLE troupe_events ADD COLUMN tags TEXT",
        """
        CREATE TABLE troupe_event_tags (
            tag TEXT NOT NULL, tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
            ordering BIGINT GENERATED ALWAYS AS IDENTITY, persistence_id TEXT NOT NULL, sequence_nr BIGINT NOT NULL,
            PRIMARY KEY (tag, tx_id, ordering))
        """,
        """
        CREATE FUNCTION troupe_tag_events() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO troupe_event_tags (tag, persistence_id, sequence_nr)
            SELECT t.tag, i.persistence_id, i.sequence_nr FROM inserted i
            CROSS JOIN LATERAL jsonb_array_elements_text(i.tags::jsonb) AS t(tag)
            WHERE i.tags IS NOT NULL ORDER BY i.ordering;
            IF FOUND THEN
                PERFORM pg_notify('troupe_events', '');
            END IF;
            RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER troupe_events_tags AFTER INSERT ON troupe_events REFERENCING NEW TABLE AS inserted
        FOR EACH STATEMENT EXECUTE FUNCTION troupe_tag_events()
        """,
        // Projections' offsets (PostgresStore+Projections), written in the projection's transaction.
        "CREATE TABLE troupe_projection_offsets (name TEXT PRIMARY KEY, tx_id xid8 NOT NULL, position BIGINT NOT NULL)",
        "UPDATE troupe_schema SET version = 2",
    ]

    /// Reminders (PostgresStore+Reminders): one row per entity and name; due ones are read by
    /// kind in due order.
    static let schemaVersion3 = [
        """
        CREATE TABLE troupe_reminders (
            kind TEXT NOT NULL, entity_key TEXT NOT NULL, name TEXT NOT NULL, due_at BIGINT NOT NULL,
            period_ms BIGINT NOT NULL, PRIMARY KEY (kind, entity_key, name))
        """,
        "CREATE INDEX troupe_reminders_by_due ON troupe_reminders (kind, due_at)",
        "UPDATE troupe_schema SET version = 3",
    ]

    // MARK: Writing

    /// A batch of appends only (the usual one) is one INSERT in a transaction of its own; if it is
    /// refused, each append is retried alone to find which one was. A batch that mixes kinds
    /// of operation runs in one transaction, each refused append rolled back to a savepoint.
    /// If the connection closes first, the commit fails at once with ``PostgresConnectionClosed``.
    public func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        if operations.isEmpty { return [] }
        let runs = Self.runs(of: operations)
        return try await client.withConnection { connection in
            try await self.failingOnClose(of: connection) {
                if runs.count == 1, case .append = operations[0] {
                    return try await self.apply(runs[0], of: operations, on: connection, inTransaction: false)
                }
                var outcomes = [JournalOutcome?](repeating: nil, count: operations.count)
                try await self.guarded(on: connection, inTransaction: false) {
                    for run in runs {
                        let applied = try await self.apply(run, of: operations, on: connection, inTransaction: true)
                        for (index, outcome) in zip(run, applied) { outcomes[index] = outcome }
                    }
                }
                return outcomes.map { $0! }
            }
        }
    }

    /// The batch as runs of one kind (appends, claims, snapshots; a state save alone), the
    /// indices of each in the order they are applied. An operation joins the latest run of its
    /// kind unless an operation of the same identity comes after that run, so each identity's
    /// operations keep their order while a batch in which many actors' appends and snapshots
    /// alternate still takes a few statements, not a few per operation (one such batch of
    /// 1,000 had held a transaction open for 22 s, and with it every tag reader on the server).
    static func runs(of operations: [JournalOperation]) -> [[Int]] {
        func kind(_ operation: JournalOperation) -> Int {
            switch operation {
            case .append: 0
            case .claimWriter: 1
            case .saveState: 2
            case .saveSnapshot: 3
            }
        }
        var runs: [[Int]] = []
        var latestRunOfKind: [Int: Int] = [:]
        var latestRunOfIdentity: [PersistenceID: Int] = [:]
        for (index, operation) in operations.enumerated() {
            let operationKind = kind(operation)
            let id = operation.persistenceID
            // A state save stays alone (kind 2).
            let joinable = operationKind == 2 ? nil : latestRunOfKind[operationKind]
            if let run = joinable, run >= latestRunOfIdentity[id, default: -1] {
                runs[run].append(index)
                latestRunOfIdentity[id] = run
                continue
            }
            runs.append([index])
            latestRunOfKind[operationKind] = runs.count - 1
            latestRunOfIdentity[id] = runs.count - 1
        }
        return runs
    }

    private func apply(
        _ run: [Int], of operations: [JournalOperation], on connection: PostgresConnection, inTransaction: Bool
    ) async throws -> [JournalOutcome] {
        switch operations[run[0]] {
        case .append:
            let appends = run.map { operations[$0] }.map { operation -> EventAppend in
                guard case .append(let append) = operation else { preconditionFailure("a run mixes kinds") }
                return append
            }
            return try await append(appends, on: connection, inTransaction: inTransaction)
        case .claimWriter: return try await claim(run.map { operations[$0].persistenceID }, on: connection)
        case .saveSnapshot:
            let writes = run.map { operations[$0] }.map { operation -> SnapshotWrite in
                guard case .saveSnapshot(let write) = operation else { preconditionFailure("a run mixes kinds") }
                return write
            }
            return try await saveSnapshots(writes, on: connection)
        case .saveState(let write): return [try await saveState(write, on: connection)]
        }
    }

    private func append(
        _ appends: [EventAppend], on connection: PostgresConnection, inTransaction: Bool
    ) async throws
        -> [JournalOutcome]
    {
        do {
            try await guarded(on: connection, inTransaction: inTransaction) {
                try await self.insert(appends, on: connection)
            }
            return Array(repeating: .written, count: appends.count)
        } catch let error as PSQLError where Self.isRefusal(error) {
            // Some append was refused: find which, one at a time (the others are stored).
        }
        var outcomes: [JournalOutcome] = []
        for append in appends {
            do {
                try await guarded(on: connection, inTransaction: inTransaction) {
                    try await self.insert([append], on: connection)
                }
                outcomes.append(.written)
            } catch let error as PSQLError where Self.isRefusal(error) {
                outcomes.append(try await refusal(of: append, on: connection))
            }
        }
        return outcomes
    }

    /// Runs `body`; inside a transaction, behind a savepoint so that a refused statement does
    /// not abort the whole transaction; outside one, in a transaction of its own.
    ///
    /// Never a statement on its own: postgres-nio ends a query at the server's CommandComplete,
    /// but a statement outside a transaction block commits only when the server then takes the
    /// protocol's Sync. A connection lost between the two rolled the insert back after the store
    /// had answered `.written` (the connection-loss test, CI rehearsal of 2026-11-27: one
    /// acknowledged batch of 13 actors' events missing). An explicit COMMIT completes only once
    /// the commit is done.
    private func guarded(
        on connection: PostgresConnection, inTransaction: Bool, _ body: () async throws -> Void
    )
        async throws
    {
        guard inTransaction else {
            try await connection.query("BEGIN", logger: logger)
            do {
                try await body()
            } catch {
                // The statement's error is the one to report; on a lost connection the rollback
                // fails too, and the server has rolled back anyway.
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            try await connection.query("COMMIT", logger: logger)
            return
        }
        try await connection.query("SAVEPOINT troupe_append", logger: logger)
        do {
            try await body()
            try await connection.query("RELEASE SAVEPOINT troupe_append", logger: logger)
        } catch {
            try await connection.query("ROLLBACK TO SAVEPOINT troupe_append", logger: logger)
            throw error
        }
    }

    private func insert(_ appends: [EventAppend], on connection: PostgresConnection) async throws {
        var ids: [String] = []
        var numbers: [Int64] = []
        var epochs: [Int64] = []
        var types: [String] = []
        var versions: [Int32] = []
        var payloads: [ByteBuffer] = []
        var tags: [String] = []
        for append in appends {
            for (offset, event) in append.events.enumerated() {
                ids.append(append.persistenceID.rawValue)
                numbers.append(append.firstSequenceNumber + Int64(offset))
                epochs.append(append.epoch.value)
                types.append(event.typeName)
                versions.append(Int32(event.version))
                payloads.append(ByteBuffer(bytes: event.payload))
                tags.append(StoredTags.encode(event.tags) ?? "")
            }
        }
        try await connection.query(
            """
            INSERT INTO troupe_events (persistence_id, sequence_nr, writer_epoch, type_name, type_version, payload, tags)
            SELECT i, n, e, t, v, p, nullif(g, '') FROM unnest(\(ids)::text[], \(numbers)::int8[], \(epochs)::int8[],
                \(types)::text[], \(versions)::int4[], \(payloads)::bytea[], \(tags)::text[]) AS u(i, n, e, t, v, p, g)
            """, logger: logger)
    }

    /// The trigger's refusals and the primary key's.
    static func isRefusal(_ error: PSQLError) -> Bool {
        guard let state = error.serverInfo?[.sqlState] else { return false }
        return state == "TRP01" || state == "TRP02" || state == "23505"
    }

    /// Why the database refused `append`.
    private func refusal(of append: EventAppend, on connection: PostgresConnection) async throws -> JournalOutcome {
        let epoch = try await currentEpoch(of: append.persistenceID, on: connection)
        if epoch != append.epoch.value { return .fenced(current: WriterEpoch(epoch)) }
        var last: Int64 = 0
        for try await value in try await connection.query(
            "SELECT coalesce(max(sequence_nr), 0) FROM troupe_events WHERE persistence_id = \(append.persistenceID.rawValue)",
            logger: logger
        ).decode(Int64.self) {
            last = value
        }
        return .sequenceConflict(expected: last + 1)
    }

    private func currentEpoch(of id: PersistenceID, on connection: PostgresConnection) async throws -> Int64 {
        var epoch: Int64 = 0
        for try await value in try await connection.query(
            "SELECT epoch FROM troupe_writers WHERE persistence_id = \(id.rawValue)", logger: logger
        ).decode(Int64.self) {
            epoch = value
        }
        return epoch
    }

    /// Raises each identity's epoch, one upsert per round of distinct identities.
    private func claim(_ ids: [PersistenceID], on connection: PostgresConnection) async throws -> [JournalOutcome] {
        var outcomes = [JournalOutcome?](repeating: nil, count: ids.count)
        var remaining = Array(ids.indices)
        while !remaining.isEmpty {
            // An upsert may change a row once per statement.
            var seen = Set<PersistenceID>()
            let round = remaining.filter { seen.insert(ids[$0]).inserted }
            let roundSet = Set(round)
            remaining.removeAll { roundSet.contains($0) }
            let names = round.map { ids[$0].rawValue }
            // Waits for the appends in flight on these stripes (see the trigger).
            try await connection.query(
                """
                SELECT pg_advisory_xact_lock(\(unescaped: String(Self.lockNamespace)), stripe) FROM (
                    SELECT DISTINCT abs(hashtext(name)) % \(unescaped: String(Self.stripes)) AS stripe FROM unnest(\(names)::text[]) AS name
                    ORDER BY 1) AS locked
                """, logger: logger)
            // The new epochs and where each history ends, in one statement: its snapshot is
            // taken after the locks above were granted, so it sees every append that held them.
            // The ends are read backwards on the primary keys (one index probe per identity,
            // however long its history).
            var epochs: [String: Int64] = [:]
            var lasts: [String: Int64] = [:]
            for try await (id, epoch, last) in try await connection.query(
                """
                WITH claimed AS (
                    INSERT INTO troupe_writers (persistence_id, epoch) SELECT unnest(\(names)::text[]), 1
                    ON CONFLICT (persistence_id) DO UPDATE SET epoch = troupe_writers.epoch + 1
                    RETURNING persistence_id, epoch)
                SELECT c.persistence_id, c.epoch, coalesce(greatest(
                    (SELECT e.sequence_nr FROM troupe_events e WHERE e.persistence_id = c.persistence_id
                     ORDER BY e.sequence_nr DESC LIMIT 1),
                    (SELECT s.sequence_nr FROM troupe_snapshots s WHERE s.persistence_id = c.persistence_id
                     ORDER BY s.sequence_nr DESC LIMIT 1)), 0)
                FROM claimed c
                """, logger: logger
            ).decode((String, Int64, Int64).self) {
                epochs[id] = epoch
                lasts[id] = last
            }
            for index in round {
                guard let epoch = epochs[ids[index].rawValue] else { throw PostgresStoreError.malformedRow("epoch") }
                outcomes[index] = .claimed(WriterEpoch(epoch), lastSequenceNumber: lasts[ids[index].rawValue] ?? 0)
            }
        }
        return outcomes.map { $0! }
    }

    /// A run of snapshots in three statements: the writers' epochs, one insert, one trim.
    private func saveSnapshots(
        _ writes: [SnapshotWrite], on connection: PostgresConnection
    ) async throws
        -> [JournalOutcome]
    {
        let names = Array(Set(writes.map(\.persistenceID.rawValue)))
        var epochs: [String: Int64] = [:]
        for try await (id, epoch) in try await connection.query(
            "SELECT persistence_id, epoch FROM troupe_writers WHERE persistence_id = ANY(\(names)::text[])",
            logger: logger
        ).decode((String, Int64).self) {
            epochs[id] = epoch
        }
        var outcomes: [JournalOutcome] = []
        // One row per (identity, number), the last write winning (an upsert changes a row once).
        var accepted: [String: [Int64: SnapshotWrite]] = [:]
        for write in writes {
            let current = epochs[write.persistenceID.rawValue] ?? 0
            guard current == write.epoch.value else {
                outcomes.append(.fenced(current: WriterEpoch(current)))
                continue
            }
            accepted[write.persistenceID.rawValue, default: [:]][write.snapshot.sequenceNumber] = write
            outcomes.append(.written)
        }
        let rows = accepted.values.flatMap(\.values)
        guard !rows.isEmpty else { return outcomes }
        let ids = rows.map(\.persistenceID.rawValue)
        let numbers = rows.map(\.snapshot.sequenceNumber)
        let types = rows.map(\.snapshot.state.typeName)
        let versions = rows.map { Int32($0.snapshot.state.version) }
        let payloads = rows.map { ByteBuffer(bytes: $0.snapshot.state.payload) }
        try await connection.query(
            """
            INSERT INTO troupe_snapshots (persistence_id, sequence_nr, type_name, type_version, payload)
            SELECT * FROM unnest(\(ids)::text[], \(numbers)::int8[], \(types)::text[], \(versions)::int4[], \(payloads)::bytea[])
            ON CONFLICT (persistence_id, sequence_nr) DO UPDATE SET payload = excluded.payload,
                type_name = excluded.type_name, type_version = excluded.type_version
            """, logger: logger)
        var keeps: [String: Int64] = [:]
        for row in rows { keeps[row.persistenceID.rawValue] = Int64(row.keep) }
        let keepIDs = Array(keeps.keys)
        let keepCounts = keepIDs.map { keeps[$0]! }
        try await connection.query(
            """
            DELETE FROM troupe_snapshots s USING unnest(\(keepIDs)::text[], \(keepCounts)::int8[]) AS k(persistence_id, keep)
            WHERE s.persistence_id = k.persistence_id AND s.sequence_nr NOT IN (
                SELECT t.sequence_nr FROM troupe_snapshots t WHERE t.persistence_id = k.persistence_id
                ORDER BY t.sequence_nr DESC LIMIT k.keep)
            """, logger: logger)
        return outcomes
    }

    private func saveState(_ write: StateWrite, on connection: PostgresConnection) async throws -> JournalOutcome {
        let epoch = try await currentEpoch(of: write.persistenceID, on: connection)
        guard epoch == write.epoch.value else { return .fenced(current: WriterEpoch(epoch)) }
        let id = write.persistenceID.rawValue
        let state = write.state
        // Compare-and-set in one statement: the first save inserts (nothing if a row exists),
        // a later one updates only over the expected revision.
        let payload = ByteBuffer(bytes: state.payload)
        let next = write.expectedRevision + 1
        let version = Int32(state.version)
        let query: PostgresQuery =
            write.expectedRevision == 0
            ? """
            INSERT INTO troupe_states (persistence_id, revision, type_name, type_version, payload)
            VALUES (\(id), \(next), \(state.typeName), \(version), \(payload))
            ON CONFLICT (persistence_id) DO NOTHING RETURNING revision
            """
            : """
            UPDATE troupe_states SET revision = \(next), type_name = \(state.typeName), type_version = \(version),
                payload = \(payload), written_at = now()
            WHERE persistence_id = \(id) AND revision = \(write.expectedRevision) RETURNING revision
            """
        var written = false
        for try await _ in try await connection.query(query, logger: logger).decode(Int64.self) { written = true }
        if written { return .written }
        var current: Int64 = 0
        for try await revision in try await connection.query(
            "SELECT revision FROM troupe_states WHERE persistence_id = \(id)", logger: logger
        ).decode(Int64.self) {
            current = revision
        }
        return .revisionConflict(current: current)
    }

    // MARK: Reading

    public func history(of id: PersistenceID) async throws -> StoredHistory {
        try await histories(of: [id])[id] ?? StoredHistory(snapshot: nil, events: [])
    }

    /// One statement (one consistent view) for the newest snapshot of each of `ids` and the
    /// events after it: each read on the primary keys from where it starts (index probes per
    /// identity, never the events a snapshot covers).
    public func histories(of ids: [PersistenceID]) async throws -> [PersistenceID: StoredHistory] {
        let names = Array(Set(ids.map(\.rawValue)))
        var snapshots: [String: SerializedSnapshot] = [:]
        var events: [String: [StoredEvent]] = [:]
        for try await (kind, id, number, type, version, payload, tags) in try await client.query(
            """
            WITH newest AS (
                SELECT n.name, s.sequence_nr, s.type_name, s.type_version, s.payload
                FROM unnest(\(names)::text[]) AS n(name)
                LEFT JOIN LATERAL (SELECT sequence_nr, type_name, type_version, payload FROM troupe_snapshots
                                   WHERE persistence_id = n.name ORDER BY sequence_nr DESC LIMIT 1) s ON true)
            SELECT 0, name, sequence_nr, type_name, type_version, payload, NULL::text FROM newest
            WHERE sequence_nr IS NOT NULL
            UNION ALL
            SELECT 1, e.persistence_id, e.sequence_nr, e.type_name, e.type_version, e.payload, e.tags FROM newest
            JOIN LATERAL (SELECT persistence_id, sequence_nr, type_name, type_version, payload, tags FROM troupe_events
                          WHERE persistence_id = newest.name AND sequence_nr > coalesce(newest.sequence_nr, 0)) e ON true
            ORDER BY 2, 1, 3
            """, logger: logger
        ).decode((Int32, String, Int64, String, Int32, ByteBuffer, String?).self) {
            var stored = SerializedEvent(
                typeName: type, version: Int(version), payload: Array(payload.readableBytesView))
            guard let decoded = StoredTags.decode(tags) else { throw PostgresStoreError.malformedRow("tags") }
            stored.tags = decoded
            if kind == 0 {
                snapshots[id] = SerializedSnapshot(sequenceNumber: number, state: stored)
            } else {
                events[id, default: []].append(
                    StoredEvent(persistenceID: PersistenceID(id), sequenceNumber: number, event: stored))
            }
        }
        var histories: [PersistenceID: StoredHistory] = [:]
        for id in ids {
            histories[id] = StoredHistory(snapshot: snapshots[id.rawValue], events: events[id.rawValue] ?? [])
        }
        return histories
    }

    public func durableState(of id: PersistenceID) async throws -> StoredState? {
        var state: StoredState?
        for try await (revision, type, version, payload) in try await client.query(
            "SELECT revision, type_name, type_version, payload FROM troupe_states WHERE persistence_id = \(id.rawValue)",
            logger: logger
        ).decode((Int64, String, Int32, ByteBuffer).self) {
            state = StoredState(
                revision: revision,
                state: SerializedEvent(typeName: type, version: Int(version), payload: Array(payload.readableBytesView))
            )
        }
        return state
    }

    /// The events tagged `tag` after `offset`, through the primary key `(tag, tx_id, ordering)`,
    /// from transactions older than every transaction still open on the server (a transaction
    /// left open anywhere on it, in any database, holds readers back until it ends). While rows
    /// are held back, the store signals its ``eventNotifier`` again shortly, so that followers
    /// retry once the older transaction has ended (its end sends no notification).
    public func events(tagged tag: String, after offset: EventOffset, limit: Int) async throws -> [TaggedEvent] {
        var found: [TaggedEvent] = []
        var heldBack = false
        let transaction = String(offset.transaction)
        // Sorted by transaction, the rows readers may take (older than every open transaction)
        // all come before those they may not: take rows up to the first held back.
        for try await (txID, ordering, id, number, type, version, payload, tags, visible) in try await client.query(
            """
            SELECT t.tx_id::text, t.ordering, e.persistence_id, e.sequence_nr, e.type_name, e.type_version, e.payload,
                e.tags, t.tx_id < pg_snapshot_xmin(pg_current_snapshot())
            FROM troupe_event_tags t
            JOIN troupe_events e ON e.persistence_id = t.persistence_id AND e.sequence_nr = t.sequence_nr
            WHERE t.tag = \(tag) AND (t.tag, t.tx_id, t.ordering) > (\(tag), \(transaction)::xid8, \(offset.position))
            ORDER BY t.tx_id, t.ordering LIMIT \(Int64(max(0, limit)))
            """, logger: logger
        ).decode((String, Int64, String, Int64, String, Int32, ByteBuffer, String?, Bool).self) {
            guard visible else {
                heldBack = true
                break
            }
            guard let transaction = UInt64(txID) else { throw PostgresStoreError.malformedRow("tx_id") }
            var event = SerializedEvent(
                typeName: type, version: Int(version), payload: Array(payload.readableBytesView))
            guard let decoded = StoredTags.decode(tags) else { throw PostgresStoreError.malformedRow("tags") }
            event.tags = decoded
            found.append(
                TaggedEvent(
                    offset: EventOffset(transaction: transaction, position: ordering), tag: tag,
                    event: StoredEvent(persistenceID: PersistenceID(id), sequenceNumber: number, event: event)))
        }
        if heldBack {
            let notifier = notifier
            Task {
                try? await Task.sleep(for: .milliseconds(20))
                notifier.signal()
            }
        }
        return found
    }

    public func storedEventVersions() async throws -> Set<StoredTypeVersion> {
        var versions: Set<StoredTypeVersion> = []
        for try await (type, version) in try await client.query(
            "SELECT DISTINCT type_name, type_version FROM troupe_events", logger: logger
        ).decode((String, Int32).self) {
            versions.insert(StoredTypeVersion(typeName: type, version: Int(version)))
        }
        return versions
    }
}

/// Why a PostgreSQL store could not connect or read.
public enum PostgresStoreError: Error, Sendable, CustomStringConvertible {
    /// The server could not be reached, or refused the login, or the schema could not be made.
    case cannotConnect(reason: String)
    /// The tables were written by a newer version of the store.
    case schemaTooNew(found: Int, supported: Int)
    /// A stored row lacks a column or holds the wrong type.
    case malformedRow(String)

    public var description: String {
        switch self {
        case .cannotConnect(let reason): "cannot use the PostgreSQL database as an event store: \(reason)"
        case .schemaTooNew(let found, let supported):
            "the database has schema version \(found); this build reads up to \(supported) (upgrade Troupe)"
        case .malformedRow(let column): "a stored row has no valid \(column)"
        }
    }
}
