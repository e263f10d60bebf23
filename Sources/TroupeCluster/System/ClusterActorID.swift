import Troupe

/// A distributed actor's identity: the node it lives on and its number there.
///
/// Equality, hashing and coding use only `node` and `number`. An id made on the actor's own
/// node also carries the actor's executor (a Troupe cell), so that ``ClusterActor``'s executor
/// costs a load, not a lookup; that reference never travels.
public struct ClusterActorID: Hashable, Sendable, Codable, CustomStringConvertible {
    public let node: ClusterNode
    public let number: UInt64
    /// The local actor's executor; nil for ids received from elsewhere.
    let executor: TroupeSerialExecutor?

    init(node: ClusterNode, number: UInt64, executor: TroupeSerialExecutor? = nil) {
        self.node = node
        self.number = number
        self.executor = executor
    }

    public static func == (lhs: ClusterActorID, rhs: ClusterActorID) -> Bool {
        lhs.number == rhs.number && lhs.node == rhs.node
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(node)
        hasher.combine(number)
    }

    enum CodingKeys: String, CodingKey { case node, number }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        node = try container.decode(ClusterNode.self, forKey: .node)
        number = try container.decode(UInt64.self, forKey: .number)
        executor = nil
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(node, forKey: .node)
        try container.encode(number, forKey: .number)
    }

    public var description: String { "\(node)/\(number)" }
}
