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

    /// Periodic claims in one `UPDATE … FROM (VALUES …)`, one-shots in one `DELETE … USING
    /// (VALUES …)` (a few hundred rows a statement), each statement atomic.
    public func claimTicks(_ claims: [ReminderClaim]) async throws -> [Bool] {
        // Matched on the identity and the due time the row has after the claim (see SQLiteStore).
        var won = Set<ReminderClaimMatch>()
        for chunk in stride(from: 0, to: claims.count, by: 256).map({ claims[$0..<min($0 + 256, claims.count)] }) {
            let periodic = chunk.filter { $0.next != nil }
            let once = chunk.filter { $0.next == nil }
            if !periodic.isEmpty {
                var bindings = PostgresBindings()
                var values: [String] = []
                for claim in periodic {
                    let first = bindings.count + 1
                    Self.bind(claim.reminder, into: &bindings)
                    bindings.append(claim.next!)
                    values.append(
                        "($\(first)::text, $\(first + 1)::text, $\(first + 2)::text, $\(first + 3)::bigint, "
                            + "$\(first + 4)::bigint, $\(first + 5)::bigint)")
                }
                let sql = """
                    UPDATE troupe_reminders AS r SET due_at = v.next
                    FROM (VALUES \(values.joined(separator: ", "))) AS v(kind, entity_key, name, due_at, period_ms, next)
                    WHERE r.kind = v.kind AND r.entity_key = v.entity_key AND r.name = v.name
                        AND r.due_at = v.due_at AND r.period_ms = v.period_ms
                    RETURNING r.kind, r.entity_key, r.name, r.due_at
                    """
                won.formUnion(
                    try await identities(
                        in: try await client.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)))
            }
            if !once.isEmpty {
                var bindings = PostgresBindings()
                var values: [String] = []
                for claim in once {
                    let first = bindings.count + 1
                    Self.bind(claim.reminder, into: &bindings)
                    values.append(
                        "($\(first)::text, $\(first + 1)::text, $\(first + 2)::text, $\(first + 3)::bigint, "
                            + "$\(first + 4)::bigint)")
                }
                let sql = """
                    DELETE FROM troupe_reminders AS r
                    USING (VALUES \(values.joined(separator: ", "))) AS v(kind, entity_key, name, due_at, period_ms)
                    WHERE r.kind = v.kind AND r.entity_key = v.entity_key AND r.name = v.name
                        AND r.due_at = v.due_at AND r.period_ms = v.period_ms
                    RETURNING r.kind, r.entity_key, r.name, r.due_at
                    """
                won.formUnion(
                    try await identities(
                        in: try await client.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)))
            }
        }
        return claims.map { won.contains(ReminderClaimMatch($0)) }
    }

    private static func bind(_ reminder: StoredReminder, into bindings: inout PostgresBindings) {
        bindings.append(reminder.kind)
        bindings.append(reminder.key)
        bindings.append(reminder.name)
        bindings.append(reminder.dueAt)
        bindings.append(reminder.periodMilliseconds)
    }

    private func identities(in rows: PostgresRowSequence) async throws -> [ReminderClaimMatch] {
        var identities: [ReminderClaimMatch] = []
        for try await (kind, key, name, due) in rows.decode((String, String, String, Int64).self) {
            identities.append(
                ReminderClaimMatch(ReminderIdentity(kind: kind, key: key, name: name), dueAfterClaim: due))
        }
        return identities
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
