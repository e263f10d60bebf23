/// Why a remote call failed. Every remote call ends with its result or one of these, never by
/// hanging: replies are awaited at most ``ClusterSettings/callTimeout``.
public enum ClusterCallError: Error, Sendable, CustomStringConvertible {
    /// No reply within the time limit. The call may or may not have run on the other node.
    /// `target` names the method as Swift does (`Module.Type.method(_:)`).
    case timedOut(target: String, after: Duration)
    /// The actor's node is down (or its id comes from an earlier run of a node at that address).
    case nodeDown(ClusterNode)
    /// The node could not be reached, or the connection closed before the reply came. The call
    /// may or may not have run.
    case nodeUnreachable(ClusterNode, reason: String)
    /// The node is up but has no actor with that id (it stopped, or never existed).
    case unknownActor(ClusterActorID)
    /// A value could not be encoded or decoded; `type` names its type, on whichever side failed.
    case serialization(type: String, reason: String)
    /// The distributed method threw: the error's type and description, as the remote node
    /// described it.
    case remote(errorType: String, message: String)
    /// The other node could not make sense of the invocation (a target or a type it does not
    /// have: the nodes run different builds).
    case invalidInvocation(String)
    /// This cluster system has shut down.
    case systemShutDown

    public var description: String {
        switch self {
        case .timedOut(let target, let after): "remote call \(target) timed out after \(after)"
        case .nodeDown(let node): "node \(node) is down"
        case .nodeUnreachable(let node, let reason): "node \(node) is unreachable: \(reason)"
        case .unknownActor(let id): "no actor \(id) on its node (stopped, or never existed)"
        case .serialization(let type, let reason): "cannot serialize \(type): \(reason)"
        case .remote(let type, let message): "the remote call threw \(type): \(message)"
        case .invalidInvocation(let why): "invalid invocation: \(why)"
        case .systemShutDown: "the cluster system has shut down"
        }
    }
}
