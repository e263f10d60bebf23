internal import TroupeLocks

/// A reminder's row key: its kind, its entity's key and its name.
struct ReminderRowKey: Hashable {
    var kind: String
    var key: String
    var name: String

    init(_ reminder: StoredReminder) {
        self.init(kind: reminder.kind, key: reminder.key, name: reminder.name)
    }

    init(kind: String, key: String, name: String) {
        self.kind = kind
        self.key = key
        self.name = name
    }
}

extension InMemoryStore {
    public func saveReminder(_ reminder: StoredReminder) async throws {
        reminderRows.withLock { $0[ReminderRowKey(reminder)] = reminder }
    }

    public func removeReminder(kind: String, key: String, name: String) async throws -> Bool {
        reminderRows.withLock { $0.removeValue(forKey: ReminderRowKey(kind: kind, key: key, name: name)) != nil }
    }

    public func reminders(of kind: String, dueBy: Int64, limit: Int) async throws -> [StoredReminder] {
        let due = reminderRows.withLock { rows in rows.values.filter { $0.kind == kind && $0.dueAt <= dueBy } }
        return Array(due.sorted(by: Self.earlierFirst).prefix(max(0, limit)))
    }

    public func reminders(of kind: String, key: String) async throws -> [StoredReminder] {
        reminderRows.withLock { rows in rows.values.filter { $0.kind == kind && $0.key == key } }
            .sorted { $0.name < $1.name }
    }

    public func claimTick(of reminder: StoredReminder, next: Int64?) async throws -> Bool {
        reminderRows.withLock { rows in
            let rowKey = ReminderRowKey(reminder)
            guard let stored = rows[rowKey], stored.dueAt == reminder.dueAt,
                stored.periodMilliseconds == reminder.periodMilliseconds
            else { return false }
            if let next { rows[rowKey]?.dueAt = next } else { rows[rowKey] = nil }
            return true
        }
    }

    /// Due time, then kind, key and name: the order every store returns due reminders in.
    static func earlierFirst(_ a: StoredReminder, _ b: StoredReminder) -> Bool {
        (a.dueAt, a.kind, a.key, a.name) < (b.dueAt, b.kind, b.key, b.name)
    }
}
