// The SQLite that sqlite-nio compiles into the package, through its C API (every symbol prefixed
// `sqlite_nio_`). sqlite-nio's own API prepares a statement per call and hops to a thread per
// statement; the store's writer runs a whole batch in one job on its thread, and its reader a
// whole recovery read, with statements prepared once, so they talk to SQLite directly. Raw
// pointers stay inside this file.
#if canImport(Glibc)
    import Glibc
#endif
import VaporCSQLite

/// One `sqlite3` connection with a cache of prepared statements.
///
/// Not thread-safe: one thread at a time (the store's writer and reader threads each run one
/// job at a time).
// Confined: only jobs of the one thread that opened it (a pool of one) touch it, one at a time.
final class UnsafeSQLiteConnection: @unchecked Sendable {
    private var handle: OpaquePointer?
    /// Keyed by the address of the statement's text: every statement is a literal, so finding
    /// one hashes a pointer, not the text.
    private var statements: [UnsafeRawPointer: UnsafeSQLiteStatement] = [:]
    /// Statements whose text is made at run time, by the name their caller gives them.
    private var generatedStatements: [String: UnsafeSQLiteStatement] = [:]
    #if DEBUG
        /// The thread that opened it; see `assertOnItsThread()`.
        private let owner = pthread_self()
    #endif

    /// Opens an existing database file for reading and writing, or only for reading.
    init(path: String, readOnly: Bool = false) throws(SQLiteResultError) {
        var handle: OpaquePointer?
        // NOMUTEX: the connection is confined to one thread, so SQLite's own per-connection
        // mutex would only cost.
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX
        let status = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let error = SQLiteResultError(code: status, message: handle.map(Self.message(of:)) ?? "cannot open \(path)")
            sqlite_nio_sqlite3_close(handle)
            throw error
        }
        self.handle = handle
        // Extended codes: an error names its precise cause (a trigger, the primary key, a full disk).
        sqlite_nio_sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        assert(handle == nil, "an UnsafeSQLiteConnection must be closed on its thread before it is released")
    }

    /// Finalizes the cached statements and closes the connection.
    func close() {
        assertOnItsThread()
        for statement in statements.values { statement.finalize() }
        for statement in generatedStatements.values { statement.finalize() }
        statements = [:]
        generatedStatements = [:]
        sqlite_nio_sqlite3_close(handle)
        handle = nil
    }

    /// Runs `sql` (one or more statements without parameters or results), not cached.
    func execute(_ sql: String) throws(SQLiteResultError) {
        assertOnItsThread()
        let status = sqlite_nio_sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw error(status) }
    }

    /// The statement for `sql`, prepared on first use and kept; its bindings are cleared and
    /// it is reset after `body`, whatever `body` did.
    func withStatement<Result>(_ sql: StaticString, _ body: (UnsafeSQLiteStatement) throws -> Result) throws -> Result {
        precondition(sql.hasPointerRepresentation, "a statement's text is a string literal")
        let key = UnsafeRawPointer(sql.utf8Start)
        let statement: UnsafeSQLiteStatement
        if let prepared = statements[key] {
            statement = prepared
        } else {
            statement = try prepare(sql.description)
            statements[key] = statement
        }
        return try use(statement, body)
    }

    /// The statement called `name`, prepared from `text()` on first use and kept: for a text
    /// made at run time (always the same for one name).
    func withStatement<Result>(
        named name: String, text: () -> String, _ body: (UnsafeSQLiteStatement) throws -> Result
    ) throws -> Result {
        let statement: UnsafeSQLiteStatement
        if let prepared = generatedStatements[name] {
            statement = prepared
        } else {
            statement = try prepare(text())
            generatedStatements[name] = statement
        }
        return try use(statement, body)
    }

    private func use<Result>(
        _ statement: UnsafeSQLiteStatement, _ body: (UnsafeSQLiteStatement) throws -> Result
    ) throws -> Result {
        assertOnItsThread()
        defer { statement.release() }
        return try body(statement)
    }

    private func prepare(_ sql: String) throws(SQLiteResultError) -> UnsafeSQLiteStatement {
        assertOnItsThread()
        var raw: OpaquePointer?
        let status = sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard status == SQLITE_OK, let raw else { throw error(status) }
        return UnsafeSQLiteStatement(raw: raw, connection: self)
    }

    /// The contract, checked in debug builds: the thread that opened the connection (the
    /// store's writer or reader thread, its pool's only one) is the only one that uses it.
    @inline(__always)
    private func assertOnItsThread() {
        #if DEBUG
            assert(pthread_equal(owner, pthread_self()) != 0, "an UnsafeSQLiteConnection used off its thread")
        #endif
    }

    /// The error for `status`, with SQLite's message for the connection's last call.
    func error(_ status: Int32) -> SQLiteResultError {
        SQLiteResultError(code: status, message: handle.map(Self.message(of:)) ?? "connection closed")
    }

    private static func message(of handle: OpaquePointer) -> String {
        sqlite_nio_sqlite3_errmsg(handle).map { String(cString: $0) } ?? "unknown error"
    }
}

/// A prepared statement of an ``UnsafeSQLiteConnection``, used inside its `withStatement`.
/// Parameters are numbered from 1, columns from 0.
struct UnsafeSQLiteStatement {
    fileprivate let raw: OpaquePointer
    fileprivate unowned let connection: UnsafeSQLiteConnection

    func bind(_ index: Int32, _ value: Int64) throws(SQLiteResultError) {
        try check(sqlite_nio_sqlite3_bind_int64(raw, index, value))
    }

    /// Binds `value`, copied by SQLite.
    func bind(_ index: Int32, _ value: String) throws(SQLiteResultError) {
        // A NULL pointer would bind NULL; the literal's pointer is valid during the call.
        if value.isEmpty { return try check(sqlite_nio_sqlite3_bind_text(raw, index, "", 0, Self.transient)) }
        var value = value
        let status = value.withUTF8 { bytes in
            // Safety: SQLITE_TRANSIENT makes SQLite copy the bytes before this call returns.
            sqlite_nio_sqlite3_bind_text(
                raw, index, UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self),
                Int32(bytes.count), Self.transient)
        }
        try check(status)
    }

    /// Binds `value`, copied by SQLite (an empty array binds an empty blob, not NULL).
    func bind(_ index: Int32, _ bytes: [UInt8]) throws(SQLiteResultError) {
        // A NULL pointer would bind NULL.
        if bytes.isEmpty { return try check(sqlite_nio_sqlite3_bind_zeroblob(raw, index, 0)) }
        let status = bytes.withUnsafeBytes { buffer in
            // Safety: SQLITE_TRANSIENT makes SQLite copy the bytes before this call returns.
            sqlite_nio_sqlite3_bind_blob(raw, index, buffer.baseAddress, Int32(buffer.count), Self.transient)
        }
        try check(status)
    }

    func bindNull(_ index: Int32) throws(SQLiteResultError) {
        try check(sqlite_nio_sqlite3_bind_null(raw, index))
    }

    /// Runs the statement to its end (no rows expected, or the rows are ignored).
    func run() throws(SQLiteResultError) {
        while try step() {}
    }

    /// One step: true while it has produced a row (read it with ``int64(_:)`` and ``isNull(_:)``).
    func step() throws(SQLiteResultError) -> Bool {
        let status = sqlite_nio_sqlite3_step(raw)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.error(status)
        }
    }

    func int64(_ column: Int32) -> Int64 { sqlite_nio_sqlite3_column_int64(raw, column) }

    func text(_ column: Int32) -> String {
        guard let bytes = sqlite_nio_sqlite3_column_text(raw, column) else { return "" }
        let count = Int(sqlite_nio_sqlite3_column_bytes(raw, column))
        // Safety: SQLite keeps the column's `count` bytes until the next step or reset.
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func isNull(_ column: Int32) -> Bool { sqlite_nio_sqlite3_column_type(raw, column) == SQLITE_NULL }

    /// The column's bytes (empty for an empty or NULL blob).
    func blob(_ column: Int32) -> [UInt8] {
        // The pointer first, then its size (SQLite's documented order).
        guard let bytes = sqlite_nio_sqlite3_column_blob(raw, column) else { return [] }
        let count = Int(sqlite_nio_sqlite3_column_bytes(raw, column))
        // Safety: SQLite keeps the column's `count` bytes until the next step or reset.
        return Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// Makes the statement ready to run again (its bindings stay).
    func reset() {
        // The status repeats the last step's error, already thrown.
        _ = sqlite_nio_sqlite3_reset(raw)
    }

    /// Resets it and clears its bindings (a bound value is not kept past its use).
    fileprivate func release() {
        reset()
        _ = sqlite_nio_sqlite3_clear_bindings(raw)
    }

    fileprivate func finalize() { _ = sqlite_nio_sqlite3_finalize(raw) }

    private func check(_ status: Int32) throws(SQLiteResultError) {
        guard status == SQLITE_OK else { throw connection.error(status) }
    }

    /// `SQLITE_TRANSIENT`, a C macro Swift does not import.
    private static let transient = unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
}

/// An error SQLite returned to the store's writer: its result code (extended) and message. A
/// full disk, for example, is code 13 (`SQLITE_FULL`), "database or disk is full".
public struct SQLiteResultError: Error, Sendable, CustomStringConvertible {
    /// SQLite's extended result code.
    public let code: Int32
    /// SQLite's message for it.
    public let message: String

    /// A constraint refused the statement (a trigger's `RAISE`, the primary key).
    public var isConstraint: Bool { code & 0xff == SQLITE_CONSTRAINT }

    public var description: String { "SQLite error \(code): \(message)" }
}

extension SQLiteResultError {
    /// A statement that did not answer as its text says it must.
    static func misuse(_ message: String) -> SQLiteResultError {
        SQLiteResultError(code: SQLITE_MISUSE, message: message)
    }
}
