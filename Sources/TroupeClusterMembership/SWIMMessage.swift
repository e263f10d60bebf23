/// What SWIM members send each other. Every message carries gossip: recent status changes,
/// piggy-backed so that membership spreads without messages of its own.
public enum SWIMMessage: Hashable, Sendable, Codable {
    /// "Are you there?" `sequence` matches the answer to the question.
    case ping(sequence: UInt64, gossip: [Gossip])
    /// "Ask `target` for me": an indirect probe through this member.
    case pingRequest(sequence: UInt64, target: ClusterNode, gossip: [Gossip])
    /// The answer to a ping (or, relayed, to a ping request) about `target`.
    case ack(sequence: UInt64, target: ClusterNode, gossip: [Gossip])

    /// One member's status, as gossip.
    public struct Gossip: Hashable, Sendable, Codable {
        public let member: ClusterNode
        public let status: ClusterMemberStatus

        public init(member: ClusterNode, status: ClusterMemberStatus) {
            self.member = member
            self.status = status
        }
    }

    public var gossip: [Gossip] {
        switch self {
        case .ping(_, let gossip), .pingRequest(_, _, let gossip), .ack(_, _, let gossip): gossip
        }
    }
}

extension SWIMMessage {
    /// The bytes this message takes on TroupeCluster's wire as one frame: the length prefix,
    /// the envelope's version and kind, then the message (TroupeCluster's `writeSWIM`; a test
    /// there holds the two equal). For the simulator's traffic figures.
    package var wireFrameSize: Int {
        func member(_ node: ClusterNode) -> Int { 4 + node.host.utf8.count + 2 + 8 }
        var size = 4 + 2 + 1 + 8 + 2
        switch self {
        case .ping: break
        case .pingRequest(_, let target, _), .ack(_, let target, _): size += member(target)
        }
        for item in gossip { size += member(item.member) + (item.status == .down ? 1 : 9) }
        return size
    }
}
