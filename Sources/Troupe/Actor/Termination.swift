/// Why an actor stopped.
public enum TerminationReason: Sendable, CustomStringConvertible {
    /// ``ActorRef/stop()`` or ``ActorContext/stop()``.
    case stopped
    /// A handler failed and the failure directive (or a restart without a factory) stopped it.
    case failed(any Error)
    /// Its parent stopped (children stop with their parent).
    case parentStopped
    /// It was spawned ``SpawnOptions/selfInvalidating`` and the last reference to it was dropped.
    case selfInvalidated
    /// The system shut down.
    case systemShutdown

    public var description: String {
        switch self {
        case .stopped: "stopped"
        case .failed(let error): "failed: \(error)"
        case .parentStopped: "parent stopped"
        case .selfInvalidated: "self-invalidated"
        case .systemShutdown: "system shutdown"
        }
    }

    /// Whether this is ``failed(_:)``.
    public var isFailure: Bool {
        if case .failed = self { return true }
        return false
    }
}

/// The notice a watcher gets, exactly once, when an actor it watches has stopped.
public struct Terminated: Sendable, CustomStringConvertible {
    /// Who stopped.
    public let actor: ActorAddress
    public let reason: TerminationReason

    public var description: String { "\(actor) terminated (\(reason))" }
}

/// An error given as the reason of a restart requested with ``ActorRef/requestRestart(reason:after:)``
/// without one of its own.
public struct RestartRequested: Error, Sendable, CustomStringConvertible {
    public init() {}
    public var description: String { "restart requested" }
}
