import TroupePersistence

/// One tick of a durable reminder, as its entity receives it (through the message the reminders'
/// `tick` closure makes of it).
///
/// Every tick is claimed in the store before it is delivered, so no two nodes deliver the same
/// one; ``scheduledAt`` is unique per tick of a reminder, so a handler that must act once per
/// tick can remember the last one it acted on. `Codable`, so that a cluster entity's message can
/// carry it to the key's owner.
public struct ReminderTick: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The reminder's name.
    public let name: String
    /// The entity's key.
    public let key: String
    /// When this tick was due, in milliseconds since 1970 (UTC). Ticks missed while no node
    /// ran the reminders are not delivered one by one: the first tick after is, with the
    /// earliest missed due time, and the next is the period's next one after now.
    public let scheduledAt: Int64
    /// The time between ticks; nil for a reminder that fires once (and is removed by its tick).
    public let period: Duration?

    public init(name: String, key: String, scheduledAt: Int64, period: Duration?) {
        self.name = name
        self.key = key
        self.scheduledAt = scheduledAt
        self.period = period
    }

    init(_ reminder: StoredReminder) {
        self.init(
            name: reminder.name, key: reminder.key, scheduledAt: reminder.dueAt,
            period: reminder.periodMilliseconds > 0 ? .milliseconds(reminder.periodMilliseconds) : nil)
    }

    public var description: String { "reminder '\(name)' of \(key) due at \(scheduledAt) ms" }
}
