import TroupeClusterMembership
import TroupePersistence

/// What one node's region of a kind holds: its share of the kind's entities.
public struct NodeEntityLoad: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The node.
    public let node: ClusterNode
    /// Activations running there now.
    public let active: Int
    /// Activations started there since its region was made.
    public let activations: Int
    /// How far the durable store is behind the node's durable actors: the journals in use in
    /// its actor system (`Journal.lag(in:)`), nil when it uses none (or runs a version that
    /// does not report it).
    public let journalLag: JournalLag?

    public init(node: ClusterNode, active: Int, activations: Int, journalLag: JournalLag? = nil) {
        self.node = node
        self.active = active
        self.activations = activations
        self.journalLag = journalLag
    }

    public var description: String {
        "\(node): \(active) active, \(activations) activations" + (journalLag.map { "; \($0)" } ?? "")
    }
}
