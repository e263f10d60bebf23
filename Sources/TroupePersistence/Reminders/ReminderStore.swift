/// Where durable reminders live: a store that keeps, for each entity, named timers that outlive
/// the process (TroupeVirtualActors' `EntityReminders` schedules them and wakes the entity when
/// one is due).
///
/// A store keeps one row per `(kind, key, name)`. A tick is **claimed** before it is delivered:
/// ``claimTick(of:next:)`` moves the reminder to its next due time (or removes a one-shot) only
/// if the row is still the one the caller read, inside the write, so of two nodes that both
/// hold a reminder due now, exactly one claims each tick.
public protocol ReminderStore: Sendable {
    /// Stores `reminder`, replacing the one of the same kind, key and name.
    func saveReminder(_ reminder: StoredReminder) async throws

    /// Removes the reminder `name` of `key` in `kind`; true if there was one.
    func removeReminder(kind: String, key: String, name: String) async throws -> Bool

    /// The reminders of `kind` due at or before `dueBy` (milliseconds since 1970, UTC), at most
    /// `limit` of them, earliest first.
    func reminders(of kind: String, dueBy: Int64, limit: Int) async throws -> [StoredReminder]

    /// The reminders of one entity, by name.
    func reminders(of kind: String, key: String) async throws -> [StoredReminder]

    /// Claims the tick `reminder` describes: if the stored row still has its due time and
    /// period, moves it to `next` (nil: removes it, for a one-shot) and returns true; otherwise
    /// (another node claimed the tick, the reminder was replaced or removed) changes nothing
    /// and returns false.
    func claimTick(of reminder: StoredReminder, next: Int64?) async throws -> Bool

    /// Claims many ticks at once, each as ``claimTick(of:next:)`` would, and returns in order
    /// whether each was claimed: one answer per claim (`EntityReminders` counts a shorter
    /// answer as a store failure and reads the unanswered reminders again). The SQLite and PostgreSQL stores claim a batch in one statement
    /// per kind of claim (periodic, one-shot); the default claims one at a time.
    func claimTicks(_ claims: [ReminderClaim]) async throws -> [Bool]
}

extension ReminderStore {
    public func claimTicks(_ claims: [ReminderClaim]) async throws -> [Bool] {
        var claimed: [Bool] = []
        claimed.reserveCapacity(claims.count)
        for claim in claims { claimed.append(try await claimTick(of: claim.reminder, next: claim.next)) }
        return claimed
    }
}

/// One tick to claim: the reminder as read, and its next due time (nil: remove a one-shot).
public struct ReminderClaim: Sendable, Hashable {
    public var reminder: StoredReminder
    public var next: Int64?

    public init(_ reminder: StoredReminder, next: Int64?) {
        self.reminder = reminder
        self.next = next
    }
}

/// A reminder's identity: kind, key and name (what a batched claim's answer is matched on).
package struct ReminderIdentity: Hashable, Sendable {
    package let kind: String
    package let key: String
    package let name: String

    package init(kind: String, key: String, name: String) {
        self.kind = kind
        self.key = key
        self.name = name
    }

    package init(_ reminder: StoredReminder) { self.init(kind: reminder.kind, key: reminder.key, name: reminder.name) }
}

/// One durable reminder as stored.
public struct StoredReminder: Sendable, Hashable, CustomStringConvertible {
    /// The entity kind (the region's name).
    public var kind: String
    /// The entity's key within its kind.
    public var key: String
    /// The reminder's name, unique per entity.
    public var name: String
    /// When the next tick is due, in milliseconds since 1970 (UTC, the wall clock: reminders
    /// survive restarts, so they cannot be on a monotonic clock).
    public var dueAt: Int64
    /// Milliseconds between ticks; 0 for a reminder that fires once.
    public var periodMilliseconds: Int64

    public init(kind: String, key: String, name: String, dueAt: Int64, periodMilliseconds: Int64) {
        self.kind = kind
        self.key = key
        self.name = name
        self.dueAt = dueAt
        self.periodMilliseconds = periodMilliseconds
    }

    public var description: String {
        "\(kind)/\(key) '\(name)' due at \(dueAt) ms"
            + (periodMilliseconds > 0 ? ", every \(periodMilliseconds) ms" : ", once")
    }
}

/// What a batched claim's answer is matched on: the reminder, and the due time its row has
/// after the claim (its next for a periodic one, the one removed for a one-shot).
package struct ReminderClaimMatch: Hashable, Sendable {
    package let identity: ReminderIdentity
    package let dueAfterClaim: Int64

    package init(_ identity: ReminderIdentity, dueAfterClaim: Int64) {
        self.identity = identity
        self.dueAfterClaim = dueAfterClaim
    }

    package init(_ claim: ReminderClaim) {
        self.init(ReminderIdentity(claim.reminder), dueAfterClaim: claim.next ?? claim.reminder.dueAt)
    }
}
