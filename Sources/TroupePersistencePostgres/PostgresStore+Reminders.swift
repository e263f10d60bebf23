import PostgresNIO
import TroupePersistence

/// Reminders in the table `troupe_reminders`, shared by every node on the database: a tick is
/// claimed by one conditional UPDATE (or DELETE), so of the nodes that hold a due reminder,
/// exactly one claims each tick.
extension PostgresStore {
    public func saveReminder(_ reminder: StoredReminder) async throws {
        try await client.query(
            """
            INSERT INTO troupe_reminders (kind, entity_key, name, due_at, period_ms)
            VALUES (\(reminder.kind), \(reminder.key), \(reminder.name), \(reminder.dueAt), \(reminder.periodMilliseconds))
            ON CONFLICT (kind, entity_key, name) DO UPDATE SET due_at = excluded.due_at, period_ms = excluded.period_ms
            """, logger: logger)
    }

    public func removeReminder(kind: String, key: String, name: String) async throws -> Bool {
        try await hasRow(
            try await client.query(
                """
                DELETE FROM troupe_reminders WHERE kind = \(kind) AND entity_key = \(key) AND name = \(name)
                RETURNING 1
                """, logger: logger))
    }

    public func reminders(of kind: String, dueBy: Int64, limit: Int) async throws -> [StoredReminder] {
        try await reminders(
            in: try await client.query(
                """
                SELECT kind, entity_key, name, due_at, period_ms FROM troupe_reminders
                WHERE kind = \(kind) AND due_at <= \(dueBy) ORDER BY due_at, entity_key, name LIMIT \(max(0, limit))
                """, logger: logger))
    }

    public func reminders(of kind: String, key: String) async throws -> [StoredReminder] {
        try await reminders(
            in: try await client.query(
                """
                SELECT kind, entity_key, name, due_at, period_ms FROM troupe_reminders
                WHERE kind = \(kind) AND entity_key = \(key) ORDER BY name
                """, logger: logger))
    }

    public func claimTick(of reminder: StoredReminder, next: Int64?) async throws -> Bool {
        let rows: PostgresRowSequence
        if let next {
            rows = try await client.query(
                """
                UPDATE troupe_reminders SET due_at = \(next)
                WHERE kind = \(reminder.kind) AND entity_key = \(reminder.key) AND name = \(reminder.name)
                    AND due_at = \(reminder.dueAt) AND period_ms = \(reminder.periodMilliseconds)
                RETURNING 1
                """, logger: logger)
        } else {
            rows = try await client.query(
                """
                DELETE FROM troupe_reminders
                WHERE kind = \(reminder.kind) AND entity_key = \(reminder.key) AND name = \(reminder.name)
                    AND due_at = \(reminder.dueAt) AND period_ms = \(reminder.periodMilliseconds)
                RETURNING 1
                """, logger: logger)
        }
        return try await hasRow(rows)
    }

    private func hasRow(_ rows: PostgresRowSequence) async throws -> Bool {
        var found = false
        for try await _ in rows { found = true }
        return found
    }

    private func reminders(in rows: PostgresRowSequence) async throws -> [StoredReminder] {
        var reminders: [StoredReminder] = []
        for try await (kind, key, name, dueAt, period) in rows.decode((String, String, String, Int64, Int64).self) {
            reminders.append(
                StoredReminder(kind: kind, key: key, name: name, dueAt: dueAt, periodMilliseconds: period))
        }
        return reminders
    }
}
