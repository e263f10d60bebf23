import Logging
import PostgresNIO
import TroupePersistence

extension PostgresStore {
    /// The offset up to which the projection `name` has committed (`EventOffset.start` if it
    /// never ran).
    public func projectionOffset(_ name: String) async throws -> EventOffset {
        var offset = EventOffset.start
        for try await (transaction, position) in try await client.query(
            "SELECT tx_id::text, position FROM troupe_projection_offsets WHERE name = \(name)", logger: logger
        ).decode((String, Int64).self) {
            guard let transaction = UInt64(transaction) else { throw PostgresStoreError.malformedRow("tx_id") }
            offset = EventOffset(transaction: transaction, position: position)
        }
        return offset
    }

    /// Runs the projection `name`: the events tagged `tag` after its stored offset, a batch at a
    /// time, each batch handed to `handle` inside a transaction that also stores the new offset.
    /// What `handle` writes on the connection it is given and the offset commit together or not
    /// at all, so every event is applied exactly once, across crashes and restarts.
    ///
    /// A batch that `handle` fails (throws) is rolled back and the error thrown: nothing of it
    /// is applied, and a new run starts again from that batch. Two runs of one projection (two
    /// nodes) never apply a batch twice: each batch's transaction locks the projection's offset
    /// row and applies nothing if another run has moved it (this run then goes on from there).
    ///
    /// With `follow` the run goes on with new events as they are stored (woken by the server's
    /// notifications, or every `pollInterval`) and returns when its task is cancelled (a batch in
    /// flight then is committed with its offset or rolled back); without, it returns once it has
    /// caught up.
    ///
    /// ```swift
    /// try await store.runProjection(named: "order-totals", tag: "orders") { events, connection in
    ///     for tagged in events {
    ///         let order = try OrderEvent.codec.decode(tagged.event.event)
    ///         try await connection.query("UPDATE totals SET amount = amount + \(order.amount) WHERE day = \(order.day)",
    ///                                    logger: logger)
    ///     }
    /// }
    /// ```
    public func runProjection(
        named name: String, tag: String, batchSize: Int = 256, follow: Bool = true,
        pollInterval: Duration = .milliseconds(250),
        _ handle: @Sendable (_ events: [TaggedEvent], _ connection: PostgresConnection) async throws -> Void
    ) async throws {
        try await runProjectionLoop(
            on: self, tag: tag, from: try await projectionOffset(name), batchSize: batchSize, follow: follow,
            pollInterval: pollInterval
        ) { batch, offset in
            guard let last = batch.last else { return offset }
            return try await withHandlersError {
                try await self.client.withTransaction(logger: self.logger) { connection in
                    let stored = try await self.lockOffset(of: name, on: connection)
                    // Another run of this projection got further: apply nothing, go on from there.
                    guard stored == offset else { return stored }
                    try await handle(batch, connection)
                    try await connection.query(
                        """
                        UPDATE troupe_projection_offsets SET tx_id = \(String(last.offset.transaction))::xid8,
                            position = \(last.offset.position)
                        WHERE name = \(name)
                        """, logger: self.logger)
                    return last.offset
                }
            }
        }
    }

    /// Runs `body`, throwing a handler's own error when the transaction was rolled back cleanly
    /// after it (postgres-nio wraps it).
    /// A batch cut short by the run's cancellation ends the run quietly (it was committed with
    /// its offset, or rolled back: the next run applies it).
    private func withHandlersError<T>(_ body: () async throws -> T) async throws -> T? {
        do { return try await body() } catch let error as PostgresTransactionError {
            if Task.isCancelled { return nil }
            if let handlersError = error.closureError, error.rollbackError == nil { throw handlersError }
            throw error
        } catch {
            if Task.isCancelled { return nil }
            throw error
        }
    }

    /// The projection's stored offset, its row locked until the transaction ends (created at
    /// the start if missing).
    private func lockOffset(of name: String, on connection: PostgresConnection) async throws -> EventOffset {
        try await connection.query(
            "INSERT INTO troupe_projection_offsets (name, tx_id, position) VALUES (\(name), '0'::xid8, 0) ON CONFLICT DO NOTHING",
            logger: logger)
        var offset = EventOffset.start
        for try await (transaction, position) in try await connection.query(
            "SELECT tx_id::text, position FROM troupe_projection_offsets WHERE name = \(name) FOR UPDATE",
            logger: logger
        ).decode((String, Int64).self) {
            guard let transaction = UInt64(transaction) else { throw PostgresStoreError.malformedRow("tx_id") }
            offset = EventOffset(transaction: transaction, position: position)
        }
        return offset
    }
}
