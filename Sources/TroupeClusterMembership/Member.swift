/// A cluster member: a node's address and the uid it drew when it started, so that a node
/// restarted on the same address is a new member.
public struct ClusterNode: Hashable, Sendable, Codable, CustomStringConvertible {
    public let host: String
    public let port: Int
    public let uid: UInt64
    /// The host's hash, taken once: tables keyed by members (SWIM's, on every message) then hash
    /// three integers instead of the host's characters each time. Swift's hash is seeded per
    /// process, so a peer cannot choose hosts that collide, and the value is never encoded.
    private let hostHash: Int

    public init(host: String, port: Int, uid: UInt64) {
        self.host = host
        self.port = port
        self.uid = uid
        hostHash = host.hashValue
    }

    public var description: String { "\(host):\(port)#\(uid)" }

    /// Equal when the uid, the port and the host are: the uid, which tells runs apart, first.
    public static func == (left: ClusterNode, right: ClusterNode) -> Bool {
        left.uid == right.uid && left.port == right.port && left.hostHash == right.hostHash && left.host == right.host
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(uid)
        hasher.combine(port)
        hasher.combine(hostHash)
    }

    private enum CodingKeys: String, CodingKey {
        case host, port, uid
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            host: try container.decode(String.self, forKey: .host), port: try container.decode(Int.self, forKey: .port),
            uid: try container.decode(UInt64.self, forKey: .uid))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(port, forKey: .port)
        try container.encode(uid, forKey: .uid)
    }
}

/// What a member knows about another: SWIM's states, ordered by incarnation.
public enum ClusterMemberStatus: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Answering (directly or through others) at this incarnation.
    case alive(incarnation: UInt64)
    /// Not answering; it can refute with a higher incarnation before the suspicion times out.
    case suspect(incarnation: UInt64)
    /// Suspected for longer than the suspicion timeout: unreachable, not yet removed.
    case unreachable(incarnation: UInt64)
    /// Removed from the cluster; final. A node that comes back joins with a new uid.
    case down

    public var incarnation: UInt64? {
        switch self {
        case .alive(let i), .suspect(let i), .unreachable(let i): i
        case .down: nil
        }
    }

    /// Suspect or unreachable: a status that times out.
    var isTimed: Bool {
        switch self {
        case .suspect, .unreachable: true
        case .alive, .down: false
        }
    }

    /// Whether `self` (heard in gossip) replaces `known` (SWIM's precedence): down beats all;
    /// otherwise a higher incarnation wins, and at equal incarnations unreachable beats suspect
    /// beats alive.
    func supersedes(_ known: ClusterMemberStatus) -> Bool {
        switch (self, known) {
        case (_, .down): return false
        case (.down, _): return true
        default:
            let (mine, theirs) = (incarnation!, known.incarnation!)
            if mine != theirs { return mine > theirs }
            return rank > known.rank
        }
    }

    private var rank: Int {
        switch self {
        case .alive: 0
        case .suspect: 1
        case .unreachable: 2
        case .down: 3
        }
    }

    public var description: String {
        switch self {
        case .alive(let i): "alive(incarnation: \(i))"
        case .suspect(let i): "suspect(incarnation: \(i))"
        case .unreachable(let i): "unreachable(incarnation: \(i))"
        case .down: "down"
        }
    }
}

/// One membership change, as the state machine reports it.
public struct ClusterMembershipEvent: Hashable, Sendable, CustomStringConvertible {
    public let member: ClusterNode
    public let status: ClusterMemberStatus

    public init(member: ClusterNode, status: ClusterMemberStatus) {
        self.member = member
        self.status = status
    }

    public var description: String { "\(member) \(status)" }
}

// The names before the product's own (see CHANGELOG.md): kept for code written against them.
@available(*, deprecated, renamed: "ClusterNode")
public typealias MemberID = ClusterNode
@available(*, deprecated, renamed: "ClusterMemberStatus")
public typealias MemberStatus = ClusterMemberStatus
@available(*, deprecated, renamed: "ClusterMembershipEvent")
public typealias MembershipEvent = ClusterMembershipEvent
