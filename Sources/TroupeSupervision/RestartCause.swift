import Troupe

/// Why a child was restarted.
public enum RestartCause: Sendable, Hashable, CustomStringConvertible {
    /// Its own failure (for a pool: one member's failure, and only that member restarts), or
    /// one reported with ``Supervisor/reportFailure(id:error:)``.
    case failed
    /// The scope (``RestartScope/allForOne``, ``RestartScope/restForOne``): the sibling with
    /// this id failed.
    case sibling(String)
    /// It is linked to the child with this id, which restarted.
    case linkedParent(String)
    /// ``Supervisor/restart(id:reason:)``.
    case requested
    /// It belongs to a nested supervisor that its parent restarted as a whole.
    case enclosingSupervisor

    public var description: String {
        switch self {
        case .failed: "failed"
        case .sibling(let id): "sibling '\(id)' failed"
        case .linkedParent(let id): "linked parent '\(id)' restarted"
        case .requested: "restart requested"
        case .enclosingSupervisor: "enclosing supervisor restarted"
        }
    }
}
