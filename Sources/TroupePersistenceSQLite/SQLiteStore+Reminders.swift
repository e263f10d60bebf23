import SQLiteNIO
import TroupePersistence

/// Reminders in the table `troupe_reminders`, read and written on the store's reader connection
/// (reminders are rare writes: they never wait behind, or hold up, the journal's batches on the
/// writer's thread; SQLite's write lock orders the two).
extension SQLiteStore {
    public func saveReminder(_ reminder: StoredReminder) async throws {
        _ = try await reader.query(
            """
            INSERT INTO troupe_reminders (kind, entity_key, name, due_at, period_ms) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (kind, entity_key, name) DO UPDATE SET due_at = excluded.due_at, period_ms = excluded.period_ms
            """,
            [
                .text(reminder.kind), .text(reminder.key), .text(reminder.name), .integer(SQLiteInt64(reminder.dueAt)),
                .integer(SQLiteInt64(reminder.periodMilliseconds)),
            ])
    }

    public func removeReminder(kind: String, key: String, name: String) async throws -> Bool {
        let rows = try await reader.query(
            "DELETE FROM troupe_reminders WHERE kind = ? AND entity_key = ? AND name = ? RETURNING 1 AS removed",
            [.text(kind), .text(key), .text(name)])
        return !rows.isEmpty
    }

    public func reminders(of kind: String, dueBy: Int64, limit: Int) async throws -> [StoredReminder] {
        try await reader.query(
            """
            SELECT kind, entity_key, name, due_at, period_ms FROM troupe_reminders
            WHERE kind = ? AND due_at <= ? ORDER BY due_at, entity_key, name LIMIT ?
            """, [.text(kind), .integer(SQLiteInt64(dueBy)), .integer(SQLiteInt64(max(0, limit)))]
        ).map(Self.reminder)
    }

    public func reminders(of kind: String, key: String) async throws -> [StoredReminder] {
        try await reader.query(
            """
            SELECT kind, entity_key, name, due_at, period_ms FROM troupe_reminders
            WHERE kind = ? AND entity_key = ? ORDER BY name
            """, [.text(kind), .text(key)]
        ).map(Self.reminder)
    }

    public func claimTick(of reminder: StoredReminder, next: Int64?) async throws -> Bool {
        let match: [SQLiteData] = [
            .text(reminder.kind), .text(reminder.key), .text(reminder.name), .integer(SQLiteInt64(reminder.dueAt)),
            .integer(SQLiteInt64(reminder.periodMilliseconds)),
        ]
        let rows: [SQLiteRow]
        if let next {
            rows = try await reader.query(
                """
                UPDATE troupe_reminders SET due_at = ?
                WHERE kind = ? AND entity_key = ? AND name = ? AND due_at = ? AND period_ms = ? RETURNING 1 AS claimed
                """, [.integer(SQLiteInt64(next))] + match)
        } else {
            rows = try await reader.query(
                """
                DELETE FROM troupe_reminders
                WHERE kind = ? AND entity_key = ? AND name = ? AND due_at = ? AND period_ms = ? RETURNING 1 AS claimed
                """, match)
        }
        return !rows.isEmpty
    }

    /// Periodic claims in one `UPDATE … FROM (VALUES …)`, one-shots in one `DELETE … IN (VALUES …)`
    /// (a few hundred rows a statement), each statement atomic. (SQLite's RETURNING names the
    /// updated table's columns unqualified: `r.kind` there is "no such column".)
    public func claimTicks(_ claims: [ReminderClaim]) async throws -> [Bool] {
        // Matched on the identity and the due time the row has after the claim (a periodic's
        // next, a one-shot's removed due time): a stale claim of a reminder claimed in the same
        // batch does not pass for the fresh one.
        var won = Set<ReminderClaimMatch>()
        for chunk in stride(from: 0, to: claims.count, by: 256).map({ claims[$0..<min($0 + 256, claims.count)] }) {
            let periodic = chunk.filter { $0.next != nil }
            let once = chunk.filter { $0.next == nil }
            if !periodic.isEmpty {
                let values = Array(repeating: "(?, ?, ?, ?, ?, ?)", count: periodic.count).joined(separator: ", ")
                let rows = try await reader.query(
                    """
                    UPDATE troupe_reminders AS r SET due_at = v.column6 FROM (VALUES \(values)) AS v
                    WHERE r.kind = v.column1 AND r.entity_key = v.column2 AND r.name = v.column3
                        AND r.due_at = v.column4 AND r.period_ms = v.column5
                    RETURNING kind, entity_key, name, due_at
                    """,
                    periodic.flatMap { Self.match($0.reminder) + [.integer(SQLiteInt64($0.next!))] })
                won.formUnion(try rows.map(Self.identity))
            }
            if !once.isEmpty {
                let values = Array(repeating: "(?, ?, ?, ?, ?)", count: once.count).joined(separator: ", ")
                let rows = try await reader.query(
                    """
                    DELETE FROM troupe_reminders
                    WHERE (kind, entity_key, name, due_at, period_ms) IN (VALUES \(values))
                    RETURNING kind, entity_key, name, due_at
                    """, once.flatMap { Self.match($0.reminder) })
                won.formUnion(try rows.map(Self.identity))
            }
        }
        return claims.map { won.contains(ReminderClaimMatch($0)) }
    }

    private static func match(_ reminder: StoredReminder) -> [SQLiteData] {
        [
            .text(reminder.kind), .text(reminder.key), .text(reminder.name), .integer(SQLiteInt64(reminder.dueAt)),
            .integer(SQLiteInt64(reminder.periodMilliseconds)),
        ]
    }

    private static func identity(_ row: SQLiteRow) throws -> ReminderClaimMatch {
        guard let kind = row.column("kind")?.string, let key = row.column("entity_key")?.string,
            let name = row.column("name")?.string
        else { throw SQLiteStoreError.malformedRow("kind, entity_key or name") }
        return ReminderClaimMatch(
            ReminderIdentity(kind: kind, key: key, name: name), dueAfterClaim: try integer(row, "due_at"))
    }

    private static func reminder(_ row: SQLiteRow) throws -> StoredReminder {
        guard let kind = row.column("kind")?.string, let key = row.column("entity_key")?.string,
            let name = row.column("name")?.string
        else { throw SQLiteStoreError.malformedRow("kind, entity_key or name") }
        return StoredReminder(
            kind: kind, key: key, name: name, dueAt: try integer(row, "due_at"),
            periodMilliseconds: try integer(row, "period_ms"))
    }
}
