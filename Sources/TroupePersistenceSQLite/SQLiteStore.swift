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
/// writer commits the `Journal`'s batches (one transaction each), the reader serves
/// recoveries concurrently with it. Tables are prefixed `troupe_`, so the file can also hold
/// your own; their schema is created and migrated by the store (``schemaVersion``).
///
/// One process writes a file at a time: the store refuses a stale writer through the
/// writer epochs, but SQLite is not a shared database (use PostgreSQL for that).
public final class SQLiteStore: PersistenceStore, EventsByTagQuery {
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

    /// The schema version this build creates and reads (2: events carry tags).
    public static let schemaVersion = 2

    public let path: String
    public let synchronous: Synchronous
    private let writer: SQLiteConnection
    private let reader: SQLiteConnection
    private let threads: NIOThreadPool
    private let closed = Atomic(false)
    /// Raised after each commit that stored tagged events: this process's followers wake at
    /// once (other processes' writes are seen at the followers' next poll).
    public let eventNotifier: EventNotifier? = EventNotifier()

    private init(
        path: String, synchronous: Synchronous, writer: SQLiteConnection, reader: SQLiteConnection,
        threads: NIOThreadPool
    ) {
        self.path = path
        self.synchronous = synchronous
        self.writer = writer
        self.reader = reader
        self.threads = threads
    }

    /// Opens (creating if needed) the store in the file at `path`, creating or migrating its
    /// tables. Throws ``SQLiteStoreError`` when the file is not a database, is corrupt, or
    /// was written by a newer schema.
    public static func open(path: String, synchronous: Synchronous = .normal) async throws -> SQLiteStore {
        // One thread per connection: SQLite calls block, and the writer's must not wait
        // behind a recovery's read.
        let threads = NIOThreadPool(numberOfThreads: 2)
        threads.start()
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        var logger = Logger(label: "troupe.persistence.sqlite")
        logger.logLevel = .warning
        var opened: [SQLiteConnection] = []
        do {
            let writer = try await SQLiteConnection.open(
                storage: .file(path: path), threadPool: threads, logger: logger, on: loop)
            opened.append(writer)
            // `busy_timeout` replaces sqlite-nio's spinning busy handler with a sleeping one.
            for pragma in [
                "PRAGMA busy_timeout = 10000", "PRAGMA journal_mode = WAL",
                "PRAGMA synchronous = \(synchronous.rawValue)",
                "PRAGMA secure_delete = OFF",
                // 64 MiB of page cache (the default is 2 MiB): the primary key's index of many
                // identities is written at random places and must stay in memory.
                "PRAGMA cache_size = -65536",
            ] {
                _ = try await writer.query(pragma)
            }
            try await migrate(writer, path: path)
            let reader = try await SQLiteConnection.open(
                storage: .file(path: path), threadPool: threads, logger: logger, on: loop)
            opened.append(reader)
            _ = try await reader.query("PRAGMA busy_timeout = 10000")
            return SQLiteStore(path: path, synchronous: synchronous, writer: writer, reader: reader, threads: threads)
        } catch {
            for connection in opened { try? await connection.close().get() }
            try? await threads.shutdownGracefully()
            if let storeError = error as? SQLiteStoreError { throw storeError }
            throw SQLiteStoreError.cannotOpen(path: path, reason: "\(error)")
        }
    }

    /// Closes both connections; the store cannot be used afterwards. A store released
    /// without `close()` closes them in the background.
    public func close() async throws {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // The future forms: sqlite-nio's async `close()` gives up when the calling task is
        // cancelled, which would leave the connections open.
        try await writer.close().get()
        try await reader.close().get()
        try await threads.shutdownGracefully()
    }

    deinit {
        guard !closed.load(ordering: .acquiring) else { return }
        // The close jobs hold the connections until they ran on the store's threads.
        let threads = threads
        writer.close().and(reader.close()).whenComplete { _ in threads.shutdownGracefully { _ in } }
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
            _ = try await connection.query("COMMIT")
        } catch {
            _ = try? await connection.query("ROLLBACK")
            throw error
        }
    }

    // MARK: Writing

    /// Commits in as few statements as the batch allows. A batch of appends only (the usual
    /// one) is one multi-row INSERT, which SQLite runs as its own transaction; the triggers and
    /// the primary key refuse a stale writer, a gap or a duplicate inside it. If that INSERT is
    /// refused, each append is retried alone to find which one was. A batch that mixes kinds of
    /// operation runs in one explicit transaction.
    public func commit(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        if operations.isEmpty { return [] }
        let outcomes = try await commitOperations(operations)
        if operations.contains(where: \.hasTags) { eventNotifier?.signal() }
        return outcomes
    }

    private func commitOperations(_ operations: [JournalOperation]) async throws -> [JournalOutcome] {
        let runs = Self.runs(of: operations)
        if runs.count == 1 { return try await apply(runs[0], of: operations) }
        _ = try await writer.query("BEGIN IMMEDIATE")
        do {
            var outcomes: [JournalOutcome] = []
            outcomes.reserveCapacity(operations.count)
            for run in runs { outcomes += try await apply(run, of: operations) }
            _ = try await writer.query("COMMIT")
            return outcomes
        } catch {
            _ = try? await writer.query("ROLLBACK")
            throw error
        }
    }

    /// Consecutive operations of one kind (appends, claims, or one snapshot or state save).
    static func runs(of operations: [JournalOperation]) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var start = 0
        func kind(_ operation: JournalOperation) -> Int {
            switch operation {
            case .append: 0
            case .claimWriter: 1
            case .saveSnapshot, .saveState: 2
            }
        }
        for index in operations.indices.dropFirst()
        where kind(operations[index]) != kind(operations[start]) || kind(operations[index]) == 2 {
            runs.append(start..<index)
            start = index
        }
        runs.append(start..<operations.count)
        return runs
    }

    private func apply(_ run: Range<Int>, of operations: [JournalOperation]) async throws -> [JournalOutcome] {
        switch operations[run.lowerBound] {
        case .append:
            return try await append(
                operations[run].map { operation in
                    guard case .append(let append) = operation else { preconditionFailure("a run mixes kinds") }
                    return append
                })
        case .claimWriter: return try await claim(operations[run].map(\.persistenceID))
        case .saveSnapshot(let write): return [try await saveSnapshot(write)]
        case .saveState(let write): return [try await saveState(write)]
        }
    }

    private func append(_ appends: [EventAppend]) async throws -> [JournalOutcome] {
        let now = SQLiteData.integer(SQLiteInt64(Self.nowMilliseconds()))
        func rows(_ appends: some Collection<EventAppend>) -> [SQLiteData] {
            var rows: [SQLiteData] = []
            // One allocation for the batch (an array literal per event would add one each).
            rows.reserveCapacity(appends.reduce(0) { $0 + $1.events.count } * Self.eventColumns)
            for append in appends {
                let id = SQLiteData.text(append.persistenceID.rawValue)
                let epoch = SQLiteData.integer(SQLiteInt64(append.epoch.value))
                for (offset, event) in append.events.enumerated() {
                    rows.append(id)
                    rows.append(.integer(SQLiteInt64(append.firstSequenceNumber + Int64(offset))))
                    rows.append(epoch)
                    rows.append(.text(event.typeName))
                    rows.append(.integer(SQLiteInt64(event.version)))
                    rows.append(.blob(ByteBuffer(bytes: event.payload)))
                    rows.append(now)
                    rows.append(StoredTags.encode(event.tags).map { .text($0) } ?? .null)
                }
            }
            return rows
        }
        let all = rows(appends)
        do {
            try await insertAtomically(all)
            return Array(repeating: .written, count: appends.count)
        } catch let error as SQLiteError where error.reason.isConstraint {
            // Some append was refused: find which, one at a time (the others are stored).
        }
        var outcomes: [JournalOutcome] = []
        for append in appends {
            do {
                try await insertAtomically(rows(CollectionOfOne(append)))
                outcomes.append(.written)
            } catch let error as SQLiteError where error.reason.isConstraint {
                outcomes.append(try await refusal(of: append))
            }
        }
        return outcomes
    }

    /// Inserts `rows` all or none: one statement is atomic by itself; more (beyond
    /// ``maximumBinds`` values) go inside a savepoint.
    private func insertAtomically(_ rows: [SQLiteData]) async throws {
        let chunks = Self.chunks(of: rows, rowWidth: Self.eventColumns)
        if chunks.count == 1 {
            try await insertEvents(chunks[0])
            return
        }
        _ = try await writer.query("SAVEPOINT troupe_append")
        do {
            for chunk in chunks { try await insertEvents(chunk) }
            _ = try await writer.query("RELEASE troupe_append")
        } catch {
            _ = try? await writer.query("ROLLBACK TO troupe_append")
            _ = try? await writer.query("RELEASE troupe_append")
            throw error
        }
    }

    /// Why the database refused `append`.
    private func refusal(of append: EventAppend) async throws -> JournalOutcome {
        let id = SQLiteData.text(append.persistenceID.rawValue)
        let epoch =
            try await writer.query("SELECT epoch FROM troupe_writers WHERE persistence_id = ?", [id])
            .first?.column("epoch")?.integer.map { Int64($0) } ?? 0
        if epoch != append.epoch.value { return .fenced(current: WriterEpoch(epoch)) }
        return .sequenceConflict(expected: try await lastSequenceNumber(of: append.persistenceID) + 1)
    }

    private func lastSequenceNumber(of id: PersistenceID) async throws -> Int64 {
        try await writer.query(
            "SELECT MAX(sequence_nr) AS last FROM troupe_events WHERE persistence_id = ?", [.text(id.rawValue)]
        ).first?.column("last")?.integer.map { Int64($0) } ?? 0
    }

    /// The values of one event's row, in the order of ``insertEvents(_:)``'s column list.
    static let eventColumns = 8

    private func insertEvents(_ rows: ArraySlice<SQLiteData>) async throws {
        _ = try await writer.query(
            """
            INSERT INTO troupe_events
            (persistence_id, sequence_nr, writer_epoch, type_name, type_version, payload, written_at, tags)
            VALUES \(Self.placeholders(rows: rows.count / Self.eventColumns, width: Self.eventColumns))
            """, Array(rows))
    }

    /// Raises each identity's epoch, in one upsert per round of distinct identities.
    private func claim(_ ids: [PersistenceID]) async throws -> [JournalOutcome] {
        var outcomes = [JournalOutcome?](repeating: nil, count: ids.count)
        var remaining = Array(ids.indices)
        while !remaining.isEmpty {
            // One claim per identity per statement (an upsert changes a row once).
            var seen = Set<PersistenceID>()
            let round = remaining.filter { seen.insert(ids[$0]).inserted }
            remaining.removeAll { index in round.contains(index) }
            var epochs: [PersistenceID: Int64] = [:]
            for chunk in Self.chunks(of: round, rowWidth: 1) {
                for row in try await writer.query(
                    "INSERT INTO troupe_writers (persistence_id, epoch) VALUES \(Array(repeating: "(?, 1)", count: chunk.count).joined(separator: ", ")) "
                        + "ON CONFLICT (persistence_id) DO UPDATE SET epoch = epoch + 1 RETURNING persistence_id, epoch",
                    chunk.map { .text(ids[$0].rawValue) })
                {
                    guard let id = row.column("persistence_id")?.string, let epoch = row.column("epoch")?.integer else {
                        throw SQLiteStoreError.malformedRow("epoch")
                    }
                    epochs[PersistenceID(id)] = Int64(epoch)
                }
            }
            let lasts = try await lastSequenceNumbers(of: round.map { ids[$0] })
            for index in round {
                guard let epoch = epochs[ids[index]] else { throw SQLiteStoreError.malformedRow("epoch") }
                outcomes[index] = .claimed(WriterEpoch(epoch), lastSequenceNumber: lasts[ids[index]] ?? 0)
            }
        }
        return outcomes.map { $0! }
    }

    /// The last event number of each of `ids` (absent: none; a snapshot may end later).
    private func lastSequenceNumbers(of ids: [PersistenceID]) async throws -> [PersistenceID: Int64] {
        var lasts: [PersistenceID: Int64] = [:]
        for chunk in Self.chunks(of: ids, rowWidth: 1) {
            let list = Self.placeholders(rows: 1, width: chunk.count)
            let binds = chunk.map { SQLiteData.text($0.rawValue) }
            for table in ["troupe_events", "troupe_snapshots"] {
                for row in try await writer.query(
                    "SELECT persistence_id, MAX(sequence_nr) AS last FROM \(table) WHERE persistence_id IN \(list) GROUP BY persistence_id",
                    binds)
                {
                    guard let id = row.column("persistence_id")?.string, let last = row.column("last")?.integer else {
                        continue
                    }
                    lasts[PersistenceID(id)] = max(lasts[PersistenceID(id)] ?? 0, Int64(last))
                }
            }
        }
        return lasts
    }

    private func currentEpoch(of id: PersistenceID) async throws -> Int64 {
        try await writer.query("SELECT epoch FROM troupe_writers WHERE persistence_id = ?", [.text(id.rawValue)])
            .first?.column("epoch")?.integer.map { Int64($0) } ?? 0
    }

    private func saveSnapshot(_ write: SnapshotWrite) async throws -> JournalOutcome {
        let epoch = try await currentEpoch(of: write.persistenceID)
        guard epoch == write.epoch.value else { return .fenced(current: WriterEpoch(epoch)) }
        _ = try await writer.query(
            "INSERT OR REPLACE INTO troupe_snapshots VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(write.persistenceID.rawValue), .integer(SQLiteInt64(write.snapshot.sequenceNumber)),
                .text(write.snapshot.state.typeName), .integer(SQLiteInt64(write.snapshot.state.version)),
                .blob(ByteBuffer(bytes: write.snapshot.state.payload)), .integer(SQLiteInt64(Self.nowMilliseconds())),
            ])
        _ = try await writer.query(
            """
            DELETE FROM troupe_snapshots WHERE persistence_id = ?1 AND sequence_nr NOT IN
            (SELECT sequence_nr FROM troupe_snapshots WHERE persistence_id = ?1 ORDER BY sequence_nr DESC LIMIT ?2)
            """,
            [.text(write.persistenceID.rawValue), .integer(SQLiteInt64(write.keep))])
        return .written
    }

    private func saveState(_ write: StateWrite) async throws -> JournalOutcome {
        let epoch = try await currentEpoch(of: write.persistenceID)
        guard epoch == write.epoch.value else { return .fenced(current: WriterEpoch(epoch)) }
        let current =
            try await writer.query(
                "SELECT revision FROM troupe_states WHERE persistence_id = ?", [.text(write.persistenceID.rawValue)]
            ).first?.column("revision")?.integer.map { Int64($0) } ?? 0
        guard current == write.expectedRevision else { return .revisionConflict(current: current) }
        _ = try await writer.query(
            "INSERT OR REPLACE INTO troupe_states VALUES (?, ?, ?, ?, ?, ?)",
            [
                .text(write.persistenceID.rawValue), .integer(SQLiteInt64(current + 1)), .text(write.state.typeName),
                .integer(SQLiteInt64(write.state.version)), .blob(ByteBuffer(bytes: write.state.payload)),
                .integer(SQLiteInt64(Self.nowMilliseconds())),
            ])
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

    public func history(of id: PersistenceID) async throws -> StoredHistory {
        let snapshotRows = try await reader.query(
            """
            SELECT sequence_nr, type_name, type_version, payload FROM troupe_snapshots
            WHERE persistence_id = ? ORDER BY sequence_nr DESC LIMIT 1
            """, [.text(id.rawValue)])
        let snapshot = try snapshotRows.first.map { row in
            SerializedSnapshot(sequenceNumber: try Self.integer(row, "sequence_nr"), state: try Self.serialized(row))
        }
        let eventRows = try await reader.query(
            """
            SELECT sequence_nr, type_name, type_version, payload, tags FROM troupe_events
            WHERE persistence_id = ? AND sequence_nr > ? ORDER BY sequence_nr
            """, [.text(id.rawValue), .integer(SQLiteInt64(snapshot?.sequenceNumber ?? 0))])
        let events = try eventRows.map { row in
            StoredEvent(
                persistenceID: id, sequenceNumber: try Self.integer(row, "sequence_nr"), event: try Self.serialized(row)
            )
        }
        return StoredHistory(snapshot: snapshot, events: events)
    }

    /// One query for the snapshots and one for the events of up to a thousand identities.
    public func histories(of ids: [PersistenceID]) async throws -> [PersistenceID: StoredHistory] {
        var snapshots: [PersistenceID: SerializedSnapshot] = [:]
        var events: [PersistenceID: [StoredEvent]] = [:]
        for start in stride(from: 0, to: ids.count, by: 1_000) {
            let chunk = ids[start..<min(start + 1_000, ids.count)]
            let list = Self.placeholders(rows: 1, width: chunk.count)
            let binds = chunk.map { SQLiteData.text($0.rawValue) }
            let latest = """
                SELECT persistence_id, max(sequence_nr) AS last FROM troupe_snapshots
                WHERE persistence_id IN \(list) GROUP BY persistence_id
                """
            for row in try await reader.query(
                """
                SELECT s.persistence_id, s.sequence_nr, s.type_name, s.type_version, s.payload FROM troupe_snapshots s
                JOIN (\(latest)) m ON s.persistence_id = m.persistence_id AND s.sequence_nr = m.last
                """, binds)
            {
                guard let id = row.column("persistence_id")?.string else {
                    throw SQLiteStoreError.malformedRow("persistence_id")
                }
                snapshots[PersistenceID(id)] = SerializedSnapshot(
                    sequenceNumber: try Self.integer(row, "sequence_nr"), state: try Self.serialized(row))
            }
            for row in try await reader.query(
                """
                SELECT e.persistence_id, e.sequence_nr, e.type_name, e.type_version, e.payload, e.tags FROM troupe_events e
                LEFT JOIN (\(latest)) m ON e.persistence_id = m.persistence_id
                WHERE e.persistence_id IN \(list) AND e.sequence_nr > coalesce(m.last, 0)
                ORDER BY e.persistence_id, e.sequence_nr
                """, binds + binds)
            {
                guard let name = row.column("persistence_id")?.string else {
                    throw SQLiteStoreError.malformedRow("persistence_id")
                }
                let id = PersistenceID(name)
                events[id, default: []].append(
                    StoredEvent(
                        persistenceID: id, sequenceNumber: try Self.integer(row, "sequence_nr"),
                        event: try Self.serialized(row)))
            }
        }
        var histories: [PersistenceID: StoredHistory] = [:]
        for id in ids { histories[id] = StoredHistory(snapshot: snapshots[id], events: events[id] ?? []) }
        return histories
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

    private static func integer(_ row: SQLiteRow, _ column: String) throws -> Int64 {
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

    /// SQLite binds at most this many values per statement.
    static let maximumBinds = 32_766

    /// Whole rows, at most ``maximumBinds`` values each.
    static func chunks<Element>(of values: [Element], rowWidth: Int) -> [ArraySlice<Element>] {
        let size = (maximumBinds / rowWidth) * rowWidth
        return stride(from: 0, to: values.count, by: size).map { values[$0..<min($0 + size, values.count)] }
    }

    /// Wall-clock milliseconds since 1970, for `written_at` (informational only).
    private static func nowMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000 + Int64(now.tv_nsec) / 1_000_000
    }
}

extension SQLiteError.Reason {
    /// A constraint refused the statement (the triggers' RAISE, the primary key).
    var isConstraint: Bool {
        switch self {
        case .constraint, .constraintTriggerFailed, .constraintPrimaryKeyFailed, .constraintUniqueFailed: true
        default: false
        }
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
