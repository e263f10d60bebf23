import TroupeClusterMembership

/// What one node's region of a kind holds: its share of the kind's entities.
public struct NodeEntityLoad: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The node.
    public let node: ClusterNode
    /// Activations running there now.
    public let active: Int
    /// Activations started there since its region was made.
    public let activations: Int

    public init(node: ClusterNode, active: Int, activations: Int) {
        self.node = node
        self.active = active
        self.activations = activations
    }

    public var description: String { "\(node): \(active) active, \(activations) activations" }
}
