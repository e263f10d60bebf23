import Troupe

/// Why a ``Supervisor`` operation was refused. Each description says what to do instead.
public enum SupervisionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Ids must not be empty.
    case emptyID(supervisor: String)
    /// The id is already taken by a child of this supervisor.
    case duplicateID(String, supervisor: String)
    /// No child has this id (never supervised, unsupervised, stopped by supervision, or it
    /// stopped by itself).
    case unknownID(String, supervisor: String)
    /// The child exists but is not of the requested kind or message type.
    case typeMismatch(id: String, expected: String, actual: String)
    /// The link would make the child its own ancestor.
    case linkCycle(child: String, parent: String)
    /// ``Supervisor/unlink(_:fromParent:)`` of two children that are not linked.
    case notLinked(child: String, parent: String)
    /// The spawn options carry a failure decider: supervision installs its own.
    case failureDeciderNotAllowed(id: String)
    /// The spawn options ask for a self-invalidating actor, which a supervisor (holding a
    /// reference to it) would keep alive forever.
    case selfInvalidatingNotSupported(id: String)
    /// The pool could not be spawned.
    case invalidPool(id: String, PoolError)
    /// The supervisor was stopped by its parent (or the parent removed it) and takes no new
    /// children.
    case supervisorStopped(String)

    public var description: String {
        switch self {
        case .emptyID(let supervisor):
            "supervisor '\(supervisor)': a child id must not be empty; pass a non-empty id"
        case .duplicateID(let id, let supervisor):
            "supervisor '\(supervisor)' already supervises a child with id '\(id)'; "
                + "choose another id, or unsupervise(id: \"\(id)\") first"
        case .unknownID(let id, let supervisor):
            "supervisor '\(supervisor)' has no child with id '\(id)'; check `ids` "
                + "(a child leaves when it is unsupervised, stopped by supervision, or stops by itself)"
        case .typeMismatch(let id, let expected, let actual):
            "child '\(id)' is \(actual), not \(expected); ask for its actual type"
                + " (ref(id:as:) for actors, pool(id:as:) for pools, supervisor(id:) for nested supervisors)"
        case .linkCycle(let child, let parent):
            "linking '\(child)' to parent '\(parent)' would make a cycle ('\(parent)' already depends on '\(child)'); "
                + "links must form a tree: unlink first or link the other way round"
        case .notLinked(let child, let parent):
            "'\(child)' is not linked to parent '\(parent)'; nothing to unlink (see linkedChildren(of:))"
        case .failureDeciderNotAllowed(let id):
            "child '\(id)': SpawnOptions.failureDecider must be nil for a supervised actor, the supervisor decides; "
                + "pass a ChildPolicy(decider:) instead"
        case .selfInvalidatingNotSupported(let id):
            "child '\(id)': a supervised actor cannot be selfInvalidating (the supervisor keeps a reference to it); "
                + "spawn it unsupervised, or stop it with unsupervise(id:)"
        case .invalidPool(let id, let error):
            "pool '\(id)' could not be spawned: \(error)"
        case .supervisorStopped(let name):
            "supervisor '\(name)' was stopped by its parent and takes no new children; create a new supervisor"
        }
    }
}
