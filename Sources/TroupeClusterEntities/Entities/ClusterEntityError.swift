import TroupeCluster

/// Why a cluster entity region could not start, or an ask through it failed. An ask reports
/// these wrapped in `AskError.failed(_:)`.
public enum ClusterEntityError: Error, Sendable, CustomStringConvertible {
    /// A value could not be encoded or decoded with the cluster's coder.
    case serialization(type: String, reason: String)
    /// The node holding the entity does not know the request's type: every node's program
    /// must contain it (see ``EntityRequest``).
    case unknownRequestType(String)
    /// The message or request was on its way to `node` when the call carrying it failed (the
    /// node left, crashed or did not answer in time); it may or may not have been handled.
    case lostInTransit(node: String, reason: String)
    /// The node holding the entity answered with a failure that has no `AskError` of its own.
    case remote(String)
    /// ``ClusterEntityRegion/awaitMembers(_:timeout:)`` saw fewer members than asked for.
    case tooFewMembers(expected: Int, present: Int, after: Duration)
    /// ``ClusterEntityRegion/awaitMembers(_:timeout:)`` saw the members, but the handoff of
    /// the last change of them was not confirmed yet by `unconfirmed` (nodes, as
    /// `ClusterNode` describes them): they have not yet stopped what moved away from them, or
    /// did not answer. The region settles by itself after its `handoffTimeout`.
    case notSettled(members: Int, unconfirmed: [String], after: Duration)
    /// No node holds the kind now, as this node sees the members (every region of it left or
    /// went down).
    case noMembers(kind: String)
    /// Registering the kind failed on this node (a second region of the same kind, for one).
    case registration(String)

    public var description: String {
        switch self {
        case .serialization(let type, let reason):
            "cannot encode or decode \(type) with the cluster's coder: \(reason)"
        case .unknownRequestType(let name):
            "the node holding the entity does not know the request type \(name): deploy the same request types on every node"
        case .lostInTransit(let node, let reason):
            "lost on its way to \(node) (\(reason)); it may or may not have been handled"
        case .remote(let message): "the entity's node answered with a failure: \(message)"
        case .tooFewMembers(let expected, let present, let after):
            "\(present) of \(expected) members hold the kind after \(after): start the other nodes, or wait longer"
        case .notSettled(let members, let unconfirmed, let after):
            "the \(members) members hold the kind, but after \(after) the handoff of their last change waits for a confirmation from \(unconfirmed.isEmpty ? "no one (it is finishing)" : unconfirmed.joined(separator: ", ")): wait longer, or check those nodes (the region starts activations anyway after its handoffTimeout)"
        case .noMembers(let kind):
            "no node holds the entity kind \(kind) now: make its ClusterEntityRegion on a node of the cluster"
        case .registration(let message): message
        }
    }
}
