import Troupe

/// Why supervision stopped a child.
public enum StopCause: Sendable, Hashable, CustomStringConvertible {
    /// The decider answered ``SupervisionDirective/stop``.
    case failed
    /// The child exceeded its ``RestartIntensity`` (with ``RestartIntensity/Exceeded/stop``).
    case intensityExceeded
    /// A top-level supervisor's escalation.
    case escalated
    /// The scope: the sibling with this id was stopped for its failure.
    case sibling(String)
    /// It is linked to the child with this id, which was stopped or unsupervised.
    case linkedParent(String)
    /// ``Supervisor/unsupervise(id:)``.
    case unsupervised
    /// ``Supervisor/stopAll()``, or its nested supervisor was stopped or removed by the parent.
    case supervisorStopped

    public var description: String {
        switch self {
        case .failed: "failed"
        case .intensityExceeded: "restart intensity exceeded"
        case .escalated: "escalated by a top-level supervisor"
        case .sibling(let id): "sibling '\(id)' stopped"
        case .linkedParent(let id): "linked parent '\(id)' removed"
        case .unsupervised: "unsupervised"
        case .supervisorStopped: "supervisor stopped"
        }
    }
}
