import Troupe

/// Something a ``Supervisor`` did or saw, for monitoring and tests.
///
/// Delivered by ``Supervisor/observe(_:)`` and ``Supervisor/events(bufferingPolicy:)``,
/// synchronously on the thread that made it happen: usually the failing actor's worker thread
/// (inside its failure), otherwise the thread that called the supervisor. No lock is held.
/// A `restarted` or `stopped` event is delivered after the restart or stop was ordered, so a
/// message sent after observing it is handled by the fresh instance (or dead-lettered).
public struct SupervisionEvent: Sendable, CustomStringConvertible {
    public enum Kind: Sendable, CustomStringConvertible {
        /// The child was restarted, or (after a failure) will be once `delay` has passed; its
        /// fresh instance's `didRestart` runs before its next message. `delay` is the backoff of
        /// the failure that caused it (the whole restarted group waits it); zero for explicit
        /// ``Supervisor/restart(id:reason:)`` calls.
        case restarted(cause: RestartCause, delay: Duration)
        /// The decider answered ``SupervisionDirective/resume``: the instance goes on.
        case resumed
        /// Supervision stopped the child and no longer supervises it.
        case stopped(cause: StopCause)
        /// The failure was escalated: to the parent supervisor with this name, or (`nil`) by a
        /// top-level supervisor, which then stops the child (a `stopped` event follows).
        case escalated(toParent: String?)
        /// The child had already been restarted `restarts` times within `within`: the failure
        /// is handled by ``RestartIntensity/whenExceeded`` instead (an event for that follows).
        case intensityExceeded(restarts: Int, within: Duration)
        /// The child stopped by itself (its own `stop`, system shutdown, …), not by
        /// supervision; it is no longer supervised and its links are removed.
        case terminated(TerminationReason)

        public var description: String {
            switch self {
            case .restarted(let cause, let delay):
                delay == .zero ? "restarted (\(cause))" : "restarted after \(delay) (\(cause))"
            case .resumed: "resumed"
            case .stopped(let cause): "stopped (\(cause))"
            case .escalated(let parent): parent.map { "escalated to '\($0)'" } ?? "escalated (top level)"
            case .intensityExceeded(let restarts, let window):
                "intensity exceeded (\(restarts) restarts within \(window))"
            case .terminated(let reason): "terminated (\(reason))"
            }
        }
    }

    /// The name of the supervisor that reports it.
    public let supervisor: String
    /// The child's id.
    public let id: String
    public let kind: Kind
    /// The failure's error (or the reason given to ``Supervisor/restart(id:reason:)``); `nil`
    /// for stops that no failure caused.
    public let error: (any Error)?
    /// The actor whose handler failed, when the event is about that actor's failure (for a
    /// pool: the member).
    public let actor: ActorAddress?

    public var description: String {
        var text = "\(supervisor)/\(id) \(kind)"
        if let error { text += ": \(error)" }
        if let actor { text += " [\(actor)]" }
        return text
    }

    /// Whether this is a `restarted` event.
    public var isRestart: Bool {
        if case .restarted = kind { return true }
        return false
    }

    /// Whether this is a `stopped` event.
    public var isStop: Bool {
        if case .stopped = kind { return true }
        return false
    }
}
