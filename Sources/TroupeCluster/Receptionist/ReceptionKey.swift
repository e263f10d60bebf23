import Distributed

/// A name under which distributed actors of one type check in with the receptionist, on any
/// node: `ReceptionKey(Greeter.self, id: "greeters")`. Two keys are the same when their ids and
/// actor types are.
public struct ReceptionKey<Act: DistributedActor>: Hashable, Sendable, CustomStringConvertible
where Act.ActorSystem == ClusterSystem {
    public let id: String

    public init(_ type: Act.Type = Act.self, id: String) {
        self.id = id
    }

    /// How the key travels: the id and the actor type's fully qualified name.
    var wireKey: String { "\(id)|\(String(reflecting: Act.self))" }

    public var description: String { "ReceptionKey<\(Act.self)>(\(id))" }
}

/// Why a receptionist call was refused.
public enum ReceptionistError: Error, Sendable, CustomStringConvertible {
    /// Only a node's own actors check in there; `actor` lives on another node.
    case notLocal(ClusterActorID)

    public var description: String {
        switch self {
        case .notLocal(let id):
            "actor \(id) lives on another node: check an actor in on the node that created it"
        }
    }
}
