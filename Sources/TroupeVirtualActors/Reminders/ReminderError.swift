/// Why a reminder was refused where it was registered (nothing was stored).
public enum ReminderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The name is empty or longer than ``EntityReminders/maximumNameLength`` bytes of UTF-8.
    case invalidName(String)
    /// The period is shorter than ``EntityReminders/minimumPeriod`` (every tick is a write to
    /// the store), the first tick's delay is negative, or either is longer than
    /// ``EntityReminders/maximumDelay``.
    case invalidTiming(String)
    /// ``EntityReminders/stop()`` was called: the reminders of this instance are no longer
    /// scheduled here.
    case stopped

    public var description: String {
        switch self {
        case .invalidName(let reason): "invalid reminder name: \(reason)"
        case .invalidTiming(let reason): "invalid reminder timing: \(reason)"
        case .stopped: "these reminders were stopped (EntityReminders.stop()): make a new EntityReminders to schedule"
        }
    }
}
