import Troupe

/// What a ``Supervisor`` does about one failure of a supervised child (a handler threw, or
/// called `context.crash(_:)`).
public enum SupervisionDirective: Sendable, Hashable, CustomStringConvertible {
    /// Replace the failed instance with a fresh one from the child's creation closure, keeping
    /// its mailbox, after the backoff delay. The strategy's ``RestartScope`` may restart
    /// siblings too, and every actor linked to a restarted one is restarted as well.
    case restart
    /// Keep the failed instance and its state and go on with the next message. The failing
    /// message is dead-lettered.
    case resume
    /// Stop the child (and, per the ``RestartScope``, its siblings) together with the actors
    /// linked to it, and stop supervising them.
    case stop
    /// Hand the failure up. A nested supervisor reports it to its parent as a failure of its
    /// own id, and the parent's strategy decides for the whole nested group. A top-level
    /// supervisor stops the child and its linked children and reports
    /// ``SupervisionEvent/Kind/escalated(toParent:)`` with no parent.
    case escalate

    public var description: String {
        switch self {
        case .restart: "restart"
        case .resume: "resume"
        case .stop: "stop"
        case .escalate: "escalate"
        }
    }
}

/// Maps a failure's error to a directive. Called on the failing actor's worker thread (or on
/// the thread of ``Supervisor/reportFailure(id:error:)``), with no lock held: keep it quick,
/// never block in it.
public typealias SupervisionDecider = @Sendable (any Error) -> SupervisionDirective
