import Logging
import NIOCore
import NIOPosix
import SQLiteNIO
import TroupePersistence

extension SQLiteStore {
    /// The offset up to which the projection `name` has committed (`EventOffset.start` if it
    /// never ran).
    public func projectionOffset(_ name: String) async throws -> EventOffset {
        try await withProjectionConnection { connection in try await Self.offset(of: name, on: connection) }
    }

    /// Runs the projection `name`: the events tagged `tag` after its stored offset, a batch at a
    /// time, each batch handed to `handle` inside a transaction of the same file that also
    /// stores the new offset. What `handle` writes on the connection it is given (tables of your
    /// own in this file) and the offset commit together or not at all, so every event is applied
    /// exactly once, across crashes and restarts.
    ///
    /// The run has a connection of its own (and a thread for it), so its transactions never mix
    /// with the journal's; SQLite's write lock serializes them. A batch that `handle` fails is
    /// rolled back and the error thrown; a new run starts again from that batch. Two runs of one
    /// projection never apply a batch twice: each batch re-reads the offset inside its write
    /// transaction and applies nothing if another run has moved it. With `follow`, the run goes
    /// on with new events (woken by this process's commits, or every `pollInterval`) and
    /// returns when its task is cancelled; without, once it has caught up.
    public func runProjection(
        named name: String, tag: String, batchSize: Int = 256, follow: Bool = true,
        pollInterval: Duration = .milliseconds(250),
        _ handle: @Sendable (_ events: [TaggedEvent], _ connection: SQLiteConnection) async throws -> Void
    ) async throws {
        try await withProjectionConnection { connection in
            try await runProjectionLoop(
                on: self, tag: tag, from: try await Self.offset(of: name, on: connection), batchSize: batchSize,
                follow: follow, pollInterval: pollInterval
            ) { batch, offset in
                guard let last = batch.last else { return offset }
                _ = try await connection.query("BEGIN IMMEDIATE")
                do {
                    let stored = try await Self.offset(of: name, on: connection)
                    // Another run of this projection got further: apply nothing, go on from there.
                    guard stored == offset else {
                        _ = try await connection.query("COMMIT")
                        return stored
                    }
                    try await handle(batch, connection)
                    _ = try await connection.query(
                        "INSERT OR REPLACE INTO troupe_projection_offsets (name, position) VALUES (?, ?)",
                        [.text(name), .integer(SQLiteInt64(last.offset.position))])
                    _ = try await connection.query("COMMIT")
                    return last.offset
                } catch {
                    _ = try? await connection.query("ROLLBACK")
                    if Task.isCancelled { return nil }
                    throw error
                }
            }
        }
    }

    private static func offset(of name: String, on connection: SQLiteConnection) async throws -> EventOffset {
        let rows = try await connection.query(
            "SELECT position FROM troupe_projection_offsets WHERE name = ?", [.text(name)])
        guard let row = rows.first else { return .start }
        guard let position = row.column("position")?.integer else {
            throw SQLiteStoreError.malformedRow("position")
        }
        return EventOffset(position: Int64(position))
    }

    /// A connection to the store's file, on a thread of its own, for `body`.
    private func withProjectionConnection<T>(_ body: (SQLiteConnection) async throws -> T) async throws -> T {
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        var logger = Logger(label: "troupe.persistence.sqlite.projection")
        logger.logLevel = .warning
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(
                storage: .file(path: path), threadPool: thread, logger: logger,
                on: MultiThreadedEventLoopGroup.singleton.any())
        } catch {
            try? await thread.shutdownGracefully()
            throw error
        }
        do {
            _ = try await connection.query("PRAGMA busy_timeout = 10000")
            let result = try await body(connection)
            // The future form: sqlite-nio's async `close()` gives up when the task is cancelled,
            // which would leave the connection open.
            try await connection.close().get()
            try await thread.shutdownGracefully()
            return result
        } catch {
            try? await connection.close().get()
            try? await thread.shutdownGracefully()
            throw error
        }
    }
}
