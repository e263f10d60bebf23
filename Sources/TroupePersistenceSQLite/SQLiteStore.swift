#if canImport(Glibc)
    import Glibc
#endif
import Logging
import NIOCore
import Synchronization
import NIOPosix
import SQLiteNIO
import TroupePersistence

/// A `PersistenceStore` in one SQLite file, in the process: nothing to install or start. SQLite
/// itself is compiled into the package (through sqlite-nio); no system library is needed.
///
/// The file is opened in WAL mode with two connections, each on a thread of its own: the
/// writer commits the `Journal`'s batches (one transaction and one job on its thread each,
/// through SQLite's C API with statements prepared once), the reader serves recoveries
/// concurrently with it (through the C API too) and the read side (sqlite-nio's API). Errors
/// from SQLite's C API are ``SQLiteResultError``s. Tables are prefixed `troupe_`, so the file can also hold
/// your own; their schema is created and migrated by the store (``schemaVersion``).
///
/// One process writes a file at a time: the store refuses a stale writer through the
/// writer epochs, but SQLite is not a shared database (use PostgreSQL for that).
public final class SQLiteStore: CallbackCommittingStore, EventsByTagQuery, ReminderStore {
    /// What a commit waits for, and so what a power failure (or an operating system crash)
    /// can take. A crash of the process alone (`kill -9`) loses no committed batch in any mode
    /// but ``Synchronous/off``.
    public enum Synchronous: String, Sendable, CaseIterable {
        /// The WAL is flushed to disk at every commit: a committed batch survives power loss.
        /// The slowest.
        case full = "FULL"
        /// The default. The WAL is flushed at checkpoints, not at every commit: after a power
        /// failure the last batches acknowledged before it may be gone (the file stays
        /// consistent, never half a batch).
        case normal = "NORMAL"
        /// No flush at all: a power failure can lose recent batches and, in rare cases,
        /// corrupt the file. Tests only.
        case off = "OFF"
    }

    /// The schema version this build creates and reads (2: events carry tags; 3: the writer's
    /// checks refuse without a statement journal; 4: reminders).
    public static let schemaVersion = 4

    public let path: String
    public let synchronous: Synchronous
    /// Touched only by jobs of `writerThread`, one at a time.
    private let writer: UnsafeSQLiteConnection
    private let writerThread: NIOThreadPool
    let reader: SQLiteConnection
    /// The reader's thread also runs recovery reads on this connection: touched only by its jobs.
    private let recoveryReader: UnsafeSQLiteConnection
    private let readerThread: NIOThreadPool
    private let closed = Atomic(false)
    /// Raised after each commit that stored tagged events: this process's followers wake at
    /// once (other processes' writes are seen at the followers' next poll).
    public let eventNotifier: EventNotifier? = EventNotifier()

    private init(
        path: String, synchronous: Synchronous, writer: UnsafeSQLiteConnection, writerThread: NIOThreadPool,
        reader: SQLiteConnection, recoveryReader: UnsafeSQLiteConnection, readerThread: NIOThreadPool
    ) {
        self.path = path
        self.synchronous = synchronous
        self.writer = writer
        self.writerThread = writerThread
        self.reader = reader
        self.recoveryReader = recoveryReader
        self.readerThread = readerThread
    }

    /// Opens (creating if needed) the store in the file at `path`, creating or migrating its
    /// tables. Throws ``SQLiteStoreError`` when the file is not a database, is corrupt, or
    /// was written by a newer schema.
    public static func open(path: String, synchronous: Synchronous = .normal) async throws -> SQLiteStore {
        // A thread per connection: SQLite calls block, and the writer's must not wait behind a
        // recovery's read.
        let readerThread = NIOThreadPool(numberOfThreads: 1)
        readerThread.start()
        let writerThread = NIOThreadPool(numberOfThreads: 1)
        writerThread.start()
        var logger = Logger(label: "troupe.persistence.sqlite")
        logger.logLevel = .warning
        var reader: SQLiteConnection?
        do {
            // The reader creates the file and its schema; the writer then opens it as it is.
            let opened = try await SQLiteConnection.open(
                storage: .file(path: path), threadPool: readerThread, logger: logger,
                on: MultiThreadedEventLoopGroup.singleton.any())
            reader = opened
            // `busy_timeout` replaces sqlite-nio's spinning busy handler with a sleeping one.
            for pragma in ["PRAGMA busy_timeout = 10000", "PRAGMA journal_mode = WAL"] {
                _ = try await opened.query(pragma)
            }
            try await migrate(opened, path: path)
            let writer = try await writerThread.runIfActive {
                let writer = try UnsafeSQLiteConnection(path: path)
                do {
                    // 64 MiB of page cache (the default is 2 MiB): the primary key's index of
                    // many identities is written at random places and must stay in memory.
                    try writer.execute(
                        """
                        PRAGMA busy_timeout = 10000; PRAGMA synchronous = \(synchronous.rawValue);
                        PRAGMA secure_delete = OFF; PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;
                        """)
                } catch {
                    writer.close()
                    throw error
                }
                return writer
            }
            let recoveryReader = try await readerThread.runIfActive {
                let recoveryReader = try UnsafeSQLiteConnection(path: path, readOnly: true)
                do {
                    try recoveryReader.execute("PRAGMA busy_timeout = 10000")
                } catch {
                    recoveryReader.close()
                    throw error
                }
                return recoveryReader
            }
            return SQLiteStore(
                path: path, synchronous: synchronous, writer: writer, writerThread: writerThread, reader: opened,
                recoveryReader: recoveryReader, readerThread: readerThread)
        } catch {
            try? await reader?.close().get()
            try? await readerThread.shutdownGracefully()
            try? await writerThread.shutdownGracefully()
            if let storeError = error as? SQLiteStoreError { throw storeError }
            throw SQLiteStoreError.cannotOpen(path: path, reason: "\(error)")
        }
    }

    /// Closes both connections; the store cannot be used afterwards. A store released
    /// without `close()` closes them in the background.
    public func close() async throws {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let writer = writer
        // Queued behind any commit still running; not cancellable (a cancelled task still
        // closes), and run even by a pool that is shutting down.
        await withCheckedContinuation { (closed: CheckedContinuation<Void, Never>) in
            writerThread.submit { _ in
                writer.close()
                closed.resume()
            }
        }
        try await writerThread.shutdownGracefully()
        let recoveryReader = recoveryReader
        await withCheckedContinuation { (closed: CheckedContinuation<Void, Never>) in
            readerThread.submit { _ in
                recoveryReader.close()
                closed.resume()
            }
        }
        // The future form: sqlite-nio's async `close()` gives up when the calling task is
        // cancelled, which would leave the connection open.
        try await reader.close().get()
        try await readerThread.shutdownGracefully()
    }

    deinit {
        guard !closed.load(ordering: .acquiring) else { return }
        // The jobs hold the connections until they ran on the store's threads.
        let writer = writer
        let (writerThread, readerThread) = (writerThread, readerThread)
        writerThread.submit { _ in
            writer.close()
            writerThread.shutdownGracefully { _ in }
        }
        let (reader, recoveryReader) = (reader, recoveryReader)
        readerThread.submit { _ in
            recoveryReader.close()
            reader.close().whenComplete { _ in readerThread.shutdownGracefully { _ in } }
        }
    }

    private static func migrate(_ connection: SQLiteConnection, path: String) async throws {
        _ = try await connection.query("BEGIN IMMEDIATE")
        do {
            _ = try await connection.query("CREATE TABLE IF NOT EXISTS troupe_schema (version INTEGER NOT NULL)")
            let rows = try await connection.query("SELECT version FROM troupe_schema")
            let version = rows.first?.column("version")?.integer.map { Int($0) } ?? 0
            if version > schemaVersion {
                throw SQLiteStoreError.schemaTooNew(path: path, found: version, supported: schemaVersion)
            }
            if version < 1 {
                for statement in [
                    """
                    CREATE TABLE troupe_events (
                        persistence_id TEXT NOT NULL, sequence_nr INTEGER NOT NULL, writer_epoch INTEGER NOT NULL,
                        type_name TEXT NOT NULL, type_version INTEGER NOT NULL, payload BLOB NOT NULL,
                        written_at INTEGER NOT NULL, PRIMARY KEY (persistence_id, sequence_nr))
                    """,
                    """
                    CREATE TABLE troupe_snapshots (
                        persistence_id TEXT NOT NULL, sequence_nr INTEGER NOT NULL, type_name TEXT NOT NULL,
                        type_version INTEGER NOT NULL, payload BLOB NOT NULL, written_at INTEGER NOT NULL,
                        PRIMARY KEY (persistence_id, sequence_nr)) WITHOUT ROWID
                    """,
                    "CREATE TABLE troupe_writers (persistence_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL) WITHOUT ROWID",
                    """
                    CREATE TABLE troupe_states (
                        persistence_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, type_name TEXT NOT NULL,
                        type_version INTEGER NOT NULL, payload BLOB NOT NULL, written_at INTEGER NOT NULL) WITHOUT ROWID
                    """,
                    // The database refuses, inside the insert itself, an event from a stale writer
                    // or one that does not follow its predecessor (the primary key refuses
                    // duplicates).
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
                    "DELETE FROM troupe_schema",
                    "INSERT INTO troupe_schema (version) VALUES (1)",
                ] {
                    _ = try await connection.query(statement)
                }
            }
            if version < 2 {
                for statement in [
                    // Tags as a JSON array beside the event; the trigger indexes them in the same
                    // statement as the insert, so a tag row exists exactly when its event does.
                    "ALTER TABLE troupe_events ADD COLUMN tags TEXT",
                    // AUTOINCREMENT: orderings are never reused. One writer at a time (SQLite's
                    // write lock), so they grow in commit order.
                    """
                    CREATE TABLE troupe_event_tags (
                        ordering INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT NOT NULL, persistence_id TEXT NOT NULL,
                        sequence_nr INTEGER NOT NULL)
                    """,
                    "CREATE INDEX troupe_event_tags_by_tag ON troupe_event_tags (tag, ordering)",
                    """
                    CREATE TRIGGER troupe_events_tags AFTER INSERT ON troupe_events WHEN NEW.tags IS NOT NULL
                    BEGIN
                        INSERT INTO troupe_event_tags (tag, persistence_id, sequence_nr)
                        SELECT value, NEW.persistence_id, NEW.sequence_nr FROM json_each(NEW.tags);
                    END
                    """,
                    // Projections' offsets (SQLiteStore+Projections), written in the projection's
                    // transaction.
                    "CREATE TABLE troupe_projection_offsets (name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID",
                    "UPDATE troupe_schema SET version = 2",
                ] {
                    _ = try await connection.query(statement)
                }
            }
            if version < 3 {
                // A refusal FAILs instead of ABORTing. The writer inserts one row per statement
                // and a BEFORE trigger or the primary key refuses it before anything is
                // written, so there is nothing to undo; an ABORT would make SQLite keep a
                // statement journal (a copy of each page touched) for every insert.
                for statement in [
                    "DROP TRIGGER troupe_events_one_writer",
                    """
                    CREATE TRIGGER troupe_events_one_writer BEFORE INSERT ON troupe_events
                    WHEN NEW.writer_epoch IS NOT (SELECT epoch FROM troupe_writers WHERE persistence_id = NEW.persistence_id)
                    BEGIN SELECT RAISE(FAIL, 'troupe: stale writer epoch'); END
                    """,
                    "DROP TRIGGER troupe_events_no_gap",
                    """
                    CREATE TRIGGER troupe_events_no_gap BEFORE INSERT ON troupe_events
                    WHEN NEW.sequence_nr > 1 AND NOT EXISTS (SELECT 1 FROM troupe_events
                        WHERE persistence_id = NEW.persistence_id AND sequence_nr = NEW.sequence_nr - 1)
                    BEGIN SELECT RAISE(FAIL, 'troupe: sequence gap'); END
                    """,
                    "UPDATE troupe_schema SET version = 3",
                ] {
                    _ = try await connection.query(statement)
                }
            }
            if version < 4 {
                // Reminders (SQLiteStore+Reminders): one row per entity and name; due ones are
                // read by kind in due order.
                for statement in [
                    """
                    CREATE TABLE troupe_reminders (
                        kind TEXT NOT NULL, entity_key TEXT NOT NULL, name TEXT NOT NULL, due_at INTEGER NOT NULL,
                        period_ms INTEGER NOT NULL, PRIMARY KEY (kind, entity_key, name)) WITHOUT ROWID
                    """,
                    "CREATE INDEX troupe_reminders_by_due ON troupe_reminders (kind, due_at)",
                    "UPDATE troupe_schema SET version = 4",
                ] {
                    _ = try await connection.query(statement)
                }
            }
            _ = try await connection.query("COMMIT")
        } catch {
            _ = try? await connection.query("ROLLBACK")
            throw error
        }
    }

    // MARK: Writing

    /// Commits the batch in one transaction, in one job on the writer's thread: each
    /// statement is prepared once for the store's life and stepped once per row, so a batch
    /// costs no parsing and no thread hop per statement. The triggers and the primary key
    /// refuse a stale writer, a gap or a duplicate inside the write; a refused append stores
    /// nothing (the others in the batch are stored) and is answered with why. Any other
    /// error rolls the whole batch back and is thrown.
    public func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        try await withCheckedThrowingContinuation { continuation in
            commit(operations) { continuation.resume(with: $0) }
        }
    }

    /// The same, reporting on the writer's thread (how a `Journal` hands this store its
    /// batches: no task per batch). A closed store fails the batch at once, on the caller's
    /// thread, with NIO's `NIOThreadPoolError.ThreadPoolInactive`.
    public func commit(
        _ operations: [JournalOperation],
        completion: @escaping @Sendable (Result<[JournalOutcome], any Error>) -> Void
    ) {
        if operations.isEmpty { return completion(.success([])) }
        let (writer, notifier) = (writer, operations.contains(where: \.hasTags) ? eventNotifier : nil)
        writerThread.submit { state in
            guard case .active = state else { return completion(.failure(NIOThreadPoolError.ThreadPoolInactive())) }
            let outcomes = Result { try Self.commit(operations, on: writer) }
            if case .success = outcomes { notifier?.signal() }
            completion(outcomes)
        }
    }

    private static func commit(
        _ operations: [JournalOperation], on writer: UnsafeSQLiteConnection
    ) throws -> [JournalOutcome] {
        try writer.withStatement("BEGIN IMMEDIATE") { try $0.run() }
        do {
            let now = nowMilliseconds()
            var outcomes: [JournalOutcome] = []
            outcomes.reserveCapacity(operations.count)
            var index = operations.startIndex
            while index < operations.endIndex {
                switch operations[index] {
                case .append(let append): outcomes.append(try Self.append(append, at: now, on: writer))
                case .claimWriter:
                    // A run of claims (a recovery storm's batch) is claimed a chunk at a time.
                    var ids: [PersistenceID] = []
                    while index < operations.endIndex, case .claimWriter(let id) = operations[index] {
                        ids.append(id)
                        index += 1
                    }
                    outcomes += try claim(ids, on: writer)
                    continue
                case .saveSnapshot(let write): outcomes.append(try saveSnapshot(write, at: now, on: writer))
                case .saveState(let write): outcomes.append(try saveState(write, at: now, on: writer))
                }
                index += 1
            }
            try writer.withStatement("COMMIT") { try $0.run() }
            return outcomes
        } catch {
            // Fails only if SQLite already rolled back (it does for some I/O errors).
            try? writer.withStatement("ROLLBACK") { try $0.run() }
            throw error
        }
    }

    private static let insertEvent: StaticString = """
        INSERT OR FAIL INTO troupe_events
        (persistence_id, sequence_nr, writer_epoch, type_name, type_version, payload, written_at, tags)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// Stores `append`'s events, or none of them, without a savepoint: only its first event
    /// can be refused. An identity's stored events are always 1...n (the gap trigger and the
    /// primary key; events are never deleted), so once the first one follows n under the
    /// current epoch, so do the others. Should a later one be refused all the same, the
    /// whole batch is rolled back (an error), never half an append stored. A savepoint would
    /// copy every page the append touches into SQLite's statement journal.
    private static func append(
        _ append: EventAppend, at now: Int64, on writer: UnsafeSQLiteConnection
    ) throws -> JournalOutcome {
        var stored = 0
        do {
            try writer.withStatement(insertEvent) { statement in
                let id = append.persistenceID.rawValue
                for event in append.events {
                    try statement.bind(1, id)
                    try statement.bind(2, append.firstSequenceNumber + Int64(stored))
                    try statement.bind(3, append.epoch.value)
                    try statement.bind(4, event.typeName)
                    try statement.bind(5, Int64(event.version))
                    try statement.bind(6, event.payload)
                    try statement.bind(7, now)
                    if let tags = StoredTags.encode(event.tags) {
                        try statement.bind(8, tags)
                    } else {
                        try statement.bindNull(8)
                    }
                    try statement.run()
                    statement.reset()
                    stored += 1
                }
            }
        } catch let error as SQLiteResultError where error.isConstraint {
            guard stored == 0 else {
                throw SQLiteResultError.misuse(
                    "event \(stored + 1) of an append to \(append.persistenceID) was refused after its first was stored: \(error.message)"
                )
            }
            return try refusal(of: append, on: writer)
        }
        return .written
    }

    /// Why the database refused `append`.
    private static func refusal(
        of append: EventAppend, on writer: UnsafeSQLiteConnection
    ) throws -> JournalOutcome {
        let epoch = try currentEpoch(of: append.persistenceID, on: writer)
        if epoch != append.epoch.value { return .fenced(current: WriterEpoch(epoch)) }
        let last = try lastEventNumber(of: append.persistenceID, on: writer)
        return .sequenceConflict(expected: last + 1)
    }

    /// How many identities one statement claims (and one more per table reads the last
    /// numbers of): a storm of recoveries claims hundreds per batch, the recovery gate's
    /// batches vary in size, and each width is a statement prepared once.
    static let claimChunks = [64, 16, 4]

    /// Raises each identity's epoch (1 for a new one), in order: distinct identities in the
    /// widest chunk that fits, one at a time where fewer are left or one repeats.
    private static func claim(_ ids: [PersistenceID], on writer: UnsafeSQLiteConnection) throws -> [JournalOutcome] {
        var outcomes: [JournalOutcome] = []
        outcomes.reserveCapacity(ids.count)
        var start = 0
        while start < ids.count {
            let left = ids.count - start
            if let width = claimChunks.first(where: { $0 <= left && Set(ids[start..<start + $0]).count == $0 }) {
                outcomes += try claim(chunk: ids[start..<start + width], on: writer)
                start += width
            } else {
                outcomes.append(try claim(ids[start], on: writer))
                start += 1
            }
        }
        return outcomes
    }

    /// Distinct identities (one of the ``claimChunks`` widths) in three statements.
    private static func claim(
        chunk: ArraySlice<PersistenceID>, on writer: UnsafeSQLiteConnection
    ) throws
        -> [JournalOutcome]
    {
        let width = chunk.count
        var epochs: [PersistenceID: Int64] = [:]
        try writer.withStatement(
            named: "claim \(width)",
            text: {
                "INSERT INTO troupe_writers (persistence_id, epoch) VALUES "
                    + Array(repeating: "(?, 1)", count: width).joined(separator: ", ")
                    + " ON CONFLICT (persistence_id) DO UPDATE SET epoch = epoch + 1 RETURNING persistence_id, epoch"
            }
        ) { statement in
            for (offset, id) in chunk.enumerated() { try statement.bind(Int32(offset + 1), id.rawValue) }
            while try statement.step() { epochs[PersistenceID(statement.text(0))] = statement.int64(1) }
        }
        var lasts: [PersistenceID: Int64] = [:]
        // A snapshot may end later than the events kept.
        for table in ["troupe_events", "troupe_snapshots"] {
            try writer.withStatement(
                named: "last numbers of \(width) in \(table)",
                text: {
                    "SELECT persistence_id, MAX(sequence_nr) FROM \(table) WHERE persistence_id IN "
                        + placeholders(rows: 1, width: width) + " GROUP BY persistence_id"
                }
            ) { statement in
                for (offset, id) in chunk.enumerated() { try statement.bind(Int32(offset + 1), id.rawValue) }
                while try statement.step() {
                    let id = PersistenceID(statement.text(0))
                    lasts[id] = max(lasts[id] ?? 0, statement.int64(1))
                }
            }
        }
        return try chunk.map { id in
            guard let epoch = epochs[id] else {
                throw SQLiteResultError.misuse("the writer upsert returned no epoch for \(id)")
            }
            return .claimed(WriterEpoch(epoch), lastSequenceNumber: lasts[id] ?? 0)
        }
    }

    /// Raises the identity's epoch (1 for a new one).
    private static func claim(
        _ id: PersistenceID, on writer: UnsafeSQLiteConnection
    ) throws
        -> JournalOutcome
    {
        let epoch = try writer.withStatement(
            """
            INSERT INTO troupe_writers (persistence_id, epoch) VALUES (?, 1)
            ON CONFLICT (persistence_id) DO UPDATE SET epoch = epoch + 1 RETURNING epoch
            """
        ) { statement in
            try statement.bind(1, id.rawValue)
            guard try statement.step() else { throw SQLiteResultError.misuse("the writer upsert returned no epoch") }
            let epoch = statement.int64(0)
            try statement.run()
            return epoch
        }
        // A snapshot may end later than the events kept.
        let last = try writer.withStatement(
            """
            SELECT max(coalesce((SELECT MAX(sequence_nr) FROM troupe_events WHERE persistence_id = ?1), 0),
                coalesce((SELECT MAX(sequence_nr) FROM troupe_snapshots WHERE persistence_id = ?1), 0))
            """
        ) { statement in
            try statement.bind(1, id.rawValue)
            return try statement.step() ? statement.int64(0) : 0
        }
        return .claimed(WriterEpoch(epoch), lastSequenceNumber: last)
    }

    /// The last event number stored for `id` (0: none).
    private static func lastEventNumber(of id: PersistenceID, on writer: UnsafeSQLiteConnection) throws -> Int64 {
        try writer.withStatement("SELECT MAX(sequence_nr) FROM troupe_events WHERE persistence_id = ?") { statement in
            try statement.bind(1, id.rawValue)
            guard try statement.step(), !statement.isNull(0) else { return 0 }
            return statement.int64(0)
        }
    }

    private static func currentEpoch(
        of id: PersistenceID, on writer: UnsafeSQLiteConnection
    ) throws
        -> Int64
    {
        try writer.withStatement("SELECT epoch FROM troupe_writers WHERE persistence_id = ?") {
            statement in
            try statement.bind(1, id.rawValue)
            return try statement.step() ? statement.int64(0) : 0
        }
    }

    private static func saveSnapshot(
        _ write: SnapshotWrite, at now: Int64, on writer: UnsafeSQLiteConnection
    ) throws -> JournalOutcome {
        let epoch = try currentEpoch(of: write.persistenceID, on: writer)
        guard epoch == write.epoch.value else { return .fenced(current: WriterEpoch(epoch)) }
        try writer.withStatement("INSERT OR REPLACE INTO troupe_snapshots VALUES (?, ?, ?, ?, ?, ?)") {
            statement in
            try statement.bind(1, write.persistenceID.rawValue)
            try statement.bind(2, write.snapshot.sequenceNumber)
            try statement.bind(3, write.snapshot.state.typeName)
            try statement.bind(4, Int64(write.snapshot.state.version))
            try statement.bind(5, write.snapshot.state.payload)
            try statement.bind(6, now)
            try statement.run()
        }
        try writer.withStatement(
            """
            DELETE FROM troupe_snapshots WHERE persistence_id = ?1 AND sequence_nr NOT IN
            (SELECT sequence_nr FROM troupe_snapshots WHERE persistence_id = ?1 ORDER BY sequence_nr DESC LIMIT ?2)
            """
        ) { statement in
            try statement.bind(1, write.persistenceID.rawValue)
            try statement.bind(2, Int64(write.keep))
            try statement.run()
        }
        return .written
    }

    private static func saveState(
        _ write: StateWrite, at now: Int64, on writer: UnsafeSQLiteConnection
    ) throws -> JournalOutcome {
        let epoch = try currentEpoch(of: write.persistenceID, on: writer)
        guard epoch == write.epoch.value else { return .fenced(current: WriterEpoch(epoch)) }
        let current = try writer.withStatement("SELECT revision FROM troupe_states WHERE persistence_id = ?") {
            statement in
            try statement.bind(1, write.persistenceID.rawValue)
            return try statement.step() ? statement.int64(0) : 0
        }
        guard current == write.expectedRevision else { return .revisionConflict(current: current) }
        try writer.withStatement("INSERT OR REPLACE INTO troupe_states VALUES (?, ?, ?, ?, ?, ?)") {
            statement in
            try statement.bind(1, write.persistenceID.rawValue)
            try statement.bind(2, current + 1)
            try statement.bind(3, write.state.typeName)
            try statement.bind(4, Int64(write.state.version))
            try statement.bind(5, write.state.payload)
            try statement.bind(6, now)
            try statement.run()
        }
        return .written
    }

    // MARK: Reading

    public func durableState(of id: PersistenceID) async throws -> StoredState? {
        let rows = try await reader.query(
            "SELECT revision, type_name, type_version, payload FROM troupe_states WHERE persistence_id = ?",
            [.text(id.rawValue)])
        return try rows.first.map { row in
            StoredState(revision: try Self.integer(row, "revision"), state: try Self.serialized(row))
        }
    }

    /// The latest snapshot and the events after it, in one job on the reader's thread
    /// through SQLite's C API (statements prepared once).
    public func history(of id: PersistenceID) async throws -> StoredHistory {
        let reader = recoveryReader
        return try await readerThread.runIfActive { try Self.history(of: id, on: reader) }
    }

    /// The histories of many identities in one job on the reader's thread, inside one read
    /// transaction (a view of the file as of its start): for up to a thousand identities at a
    /// time, one statement for their latest snapshots and one for their events.
    public func histories(of ids: [PersistenceID]) async throws -> [PersistenceID: StoredHistory] {
        let reader = recoveryReader
        return try await readerThread.runIfActive {
            if ids.count == 1 { return [ids[0]: try Self.history(of: ids[0], on: reader)] }
            try reader.execute("BEGIN")
            defer { try? reader.execute("COMMIT") }
            var histories: [PersistenceID: StoredHistory] = [:]
            histories.reserveCapacity(ids.count)
            for start in stride(from: 0, to: ids.count, by: 1_000) {
                try Self.histories(of: ids[start..<min(start + 1_000, ids.count)], on: reader, into: &histories)
            }
            return histories
        }
    }

    /// The sizes of the identity lists the batched reads' statements take: a chunk is padded
    /// to the next one by repeating an identity (an `IN` list ignores repeats), so a handful
    /// of statements serve every chunk.
    static let historyListSizes = [8, 64, 512, 1_000]

    private static func histories(
        of chunk: ArraySlice<PersistenceID>, on reader: UnsafeSQLiteConnection,
        into histories: inout [PersistenceID: StoredHistory]
    ) throws {
        let size = historyListSizes.first { $0 >= chunk.count } ?? chunk.count
        let list = "(" + (1...size).map { "?\($0)" }.joined(separator: ", ") + ")"
        let latest = """
            SELECT persistence_id, max(sequence_nr) AS last FROM troupe_snapshots
            WHERE persistence_id IN \(list) GROUP BY persistence_id
            """
        func bindIDs(_ statement: UnsafeSQLiteStatement) throws {
            for (offset, id) in chunk.enumerated() { try statement.bind(Int32(offset + 1), id.rawValue) }
            for slot in chunk.count..<size { try statement.bind(Int32(slot + 1), chunk[chunk.startIndex].rawValue) }
        }
        try reader.withStatement(
            named: "snapshots-\(size)",
            text: {
                """
                SELECT s.persistence_id, s.sequence_nr, s.type_name, s.type_version, s.payload FROM troupe_snapshots s
                JOIN (\(latest)) m ON s.persistence_id = m.persistence_id AND s.sequence_nr = m.last
                """
            }
        ) { statement in
            try bindIDs(statement)
            while try statement.step() {
                let id = PersistenceID(statement.text(0))
                let snapshot = SerializedSnapshot(
                    sequenceNumber: statement.int64(1), state: try serialized(statement, from: 2, tagsColumn: nil))
                histories[id] = StoredHistory(snapshot: snapshot, events: [])
            }
        }
        try reader.withStatement(
            named: "events-\(size)",
            text: {
                """
                SELECT e.persistence_id, e.sequence_nr, e.type_name, e.type_version, e.payload, e.tags
                FROM troupe_events e LEFT JOIN (\(latest)) m ON e.persistence_id = m.persistence_id
                WHERE e.persistence_id IN \(list) AND e.sequence_nr > coalesce(m.last, 0)
                ORDER BY e.persistence_id, e.sequence_nr
                """
            }
        ) { statement in
            try bindIDs(statement)
            while try statement.step() {
                let id = PersistenceID(statement.text(0))
                let event = StoredEvent(
                    persistenceID: id, sequenceNumber: statement.int64(1),
                    event: try serialized(statement, from: 2, tagsColumn: 5))
                histories[id, default: StoredHistory(snapshot: nil, events: [])].events.append(event)
            }
        }
        for id in chunk where histories[id] == nil { histories[id] = StoredHistory(snapshot: nil, events: []) }
    }

    private static func history(of id: PersistenceID, on reader: UnsafeSQLiteConnection) throws -> StoredHistory {
        let snapshot = try reader.withStatement(
            """
            SELECT sequence_nr, type_name, type_version, payload FROM troupe_snapshots
            WHERE persistence_id = ?1 ORDER BY sequence_nr DESC LIMIT 1
            """
        ) { statement -> SerializedSnapshot? in
            try statement.bind(1, id.rawValue)
            guard try statement.step() else { return nil }
            return SerializedSnapshot(
                sequenceNumber: statement.int64(0), state: try serialized(statement, from: 1, tagsColumn: nil))
        }
        let events = try reader.withStatement(
            """
            SELECT sequence_nr, type_name, type_version, payload, tags FROM troupe_events
            WHERE persistence_id = ?1 AND sequence_nr > ?2 ORDER BY sequence_nr
            """
        ) { statement in
            try statement.bind(1, id.rawValue)
            try statement.bind(2, snapshot?.sequenceNumber ?? 0)
            var events: [StoredEvent] = []
            while try statement.step() {
                events.append(
                    StoredEvent(
                        persistenceID: id, sequenceNumber: statement.int64(0),
                        event: try serialized(statement, from: 1, tagsColumn: 4)))
            }
            return events
        }
        return StoredHistory(snapshot: snapshot, events: events)
    }

    /// The type name, version and payload in the three columns from `first`, and the tags in
    /// `tagsColumn` (NULL: none).
    private static func serialized(
        _ statement: UnsafeSQLiteStatement, from first: Int32, tagsColumn: Int32?
    ) throws -> SerializedEvent {
        guard !statement.isNull(first), !statement.isNull(first + 2) else {
            throw SQLiteStoreError.malformedRow("type_name or payload")
        }
        var event = SerializedEvent(
            typeName: statement.text(first), version: Int(statement.int64(first + 1)),
            payload: statement.blob(first + 2))
        if let tagsColumn {
            guard let tags = StoredTags.decode(statement.isNull(tagsColumn) ? nil : statement.text(tagsColumn)) else {
                throw SQLiteStoreError.malformedRow("tags")
            }
            event.tags = tags
        }
        return event
    }

    /// The events tagged `tag` after `offset` (its `EventOffset.position` is the tag index's
    /// ordering), through the index on `(tag, ordering)`.
    public func events(tagged tag: String, after offset: EventOffset, limit: Int) async throws -> [TaggedEvent] {
        let rows = try await reader.query(
            """
            SELECT t.ordering, e.persistence_id, e.sequence_nr, e.type_name, e.type_version, e.payload, e.tags
            FROM troupe_event_tags t
            JOIN troupe_events e ON e.persistence_id = t.persistence_id AND e.sequence_nr = t.sequence_nr
            WHERE t.tag = ? AND t.ordering > ? ORDER BY t.ordering LIMIT ?
            """, [.text(tag), .integer(SQLiteInt64(offset.position)), .integer(SQLiteInt64(max(0, limit)))])
        return try rows.map { row in
            guard let id = row.column("persistence_id")?.string else {
                throw SQLiteStoreError.malformedRow("persistence_id")
            }
            return TaggedEvent(
                offset: EventOffset(position: try Self.integer(row, "ordering")), tag: tag,
                event: StoredEvent(
                    persistenceID: PersistenceID(id), sequenceNumber: try Self.integer(row, "sequence_nr"),
                    event: try Self.serialized(row)))
        }
    }

    public func storedEventVersions() async throws -> Set<StoredTypeVersion> {
        let rows = try await reader.query("SELECT DISTINCT type_name, type_version FROM troupe_events")
        return Set(
            try rows.map { row in
                guard let name = row.column("type_name")?.string else {
                    throw SQLiteStoreError.malformedRow("type_name")
                }
                return StoredTypeVersion(typeName: name, version: Int(try Self.integer(row, "type_version")))
            })
    }

    // MARK: Helpers

    static func integer(_ row: SQLiteRow, _ column: String) throws -> Int64 {
        guard let value = row.column(column)?.integer else { throw SQLiteStoreError.malformedRow(column) }
        return Int64(value)
    }

    private static func serialized(_ row: SQLiteRow) throws -> SerializedEvent {
        guard let name = row.column("type_name")?.string, let payload = row.column("payload")?.blob else {
            throw SQLiteStoreError.malformedRow("type_name or payload")
        }
        var event = SerializedEvent(
            typeName: name, version: Int(try integer(row, "type_version")), payload: Array(payload.readableBytesView))
        // Snapshots and states have no tags column; an event's is NULL without tags.
        guard let tags = StoredTags.decode(row.column("tags")?.string) else {
            throw SQLiteStoreError.malformedRow("tags")
        }
        event.tags = tags
        return event
    }

    /// `(?, ?), (?, ?)` for `rows` rows of `width` values.
    static func placeholders(rows: Int, width: Int) -> String {
        let row = "(" + Array(repeating: "?", count: width).joined(separator: ", ") + ")"
        return Array(repeating: row, count: rows).joined(separator: ", ")
    }

    /// Wall-clock milliseconds since 1970, for `written_at` (informational only).
    private static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000 + Int64(now.tv_nsec) / 1_000_000
    }
}

/// Why an SQLite store could not be opened or read.
public enum SQLiteStoreError: Error, Sendable, CustomStringConvertible {
    /// The file could not be opened as a database (not a database, corrupt, no permission, …).
    case cannotOpen(path: String, reason: String)
    /// The file's tables were written by a newer version of the store.
    case schemaTooNew(path: String, found: Int, supported: Int)
    /// A stored row lacks a column or holds the wrong type.
    case malformedRow(String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open \(path) as an event store: \(reason)"
        case .schemaTooNew(let path, let found, let supported):
            "\(path) has schema version \(found); this build reads up to \(supported) (upgrade Troupe)"
        case .malformedRow(let column): "a stored row has no valid \(column)"
        }
    }
}
