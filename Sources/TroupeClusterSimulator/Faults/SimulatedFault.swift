/// What can happen to a simulated cluster. Nodes are named by their index, in the order they
/// were started (the initial nodes first, then each `.join`).
public enum SimulatedFault: Sendable, Hashable, CustomStringConvertible {
    /// The process is killed (`kill -9`): nothing listens at its address any more, so its
    /// peers' connections drop and their redials are refused, as the OS does.
    case kill(node: Int)
    /// The machine is gone (power, a cable): messages to it go unanswered and nothing is
    /// refused; only SWIM's probes find out.
    case vanish(node: Int)
    /// A killed or vanished node starts again at its address with a fresh uid (a new member)
    /// and joins through a live node.
    case restart(node: Int)
    /// The node stops for a while (a long GC pause, a stolen CPU): it neither runs timers nor
    /// reads messages, which wait for it as in its socket buffers.
    case pause(node: Int, for: Duration)
    /// The node is overloaded for a while (CPU starved): its timers fire, but every message it
    /// receives waits `by` before it is read. Lifeguard's case: a slow node's probes seem to go
    /// unanswered, and it would suspect healthy members.
    case slow(node: Int, by: Duration, for: Duration)
    /// Cuts the links between `group` and the other nodes (only those leaving `group` when
    /// `oneWay`), replacing any partition in place.
    case partition(group: [Int], oneWay: Bool)
    /// Ends the partition.
    case heal
    /// Sets the probability that a message is lost.
    case loss(Double)
    /// A new node joins through a live node.
    case join
    /// A process that does not know the cluster secret dials `node` with the cluster's name
    /// and tries `tactic`. Nothing it sends may change any member's view: the handshake refuses
    /// it, and a run in which it gets through or removes a member breaks a property.
    case stranger(dials: Int, StrangerTactic)

    public var description: String {
        switch self {
        case .kill(let node): "kill -9 node \(node)"
        case .vanish(let node): "node \(node) vanishes"
        case .restart(let node): "restart node \(node) with a fresh uid"
        case .pause(let node, let duration): "pause node \(node) for \(duration)"
        case .slow(let node, let delay, let duration): "node \(node) reads messages \(delay) late for \(duration)"
        case .partition(let group, let oneWay): "partition \(group.sorted()) \(oneWay ? "(outgoing only)" : "")"
        case .heal: "heal the partition"
        case .loss(let loss): "loss \(loss * 100) %"
        case .join: "a node joins"
        case .stranger(let node, let tactic): "a stranger dials node \(node): \(tactic)"
        }
    }
}

/// What a stranger (``SimulatedFault/stranger(dials:_:)``) tries: it has the cluster's name,
/// and can claim any member's identity, but not the secret.
public enum StrangerTactic: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// It runs the real handshake with a secret of its own: it cannot check the node's
    /// challenge, and refuses it.
    case wrongSecret
    /// It claims a member's identity and answers the challenge with a proof it made up.
    case forgedProof
    /// It claims a member's identity and answers the challenge with "you are down", under a
    /// made-up proof (the frame that removed a node for good before issue 28).
    case forgedDownNotice
    /// It claims a member's identity and, right after its hello, sends membership gossip
    /// saying that the dialled node is down, before any proof.
    case gossipBeforeProof

    public var description: String {
        switch self {
        case .wrongSecret: "the handshake with a wrong secret"
        case .forgedProof: "a made-up proof, as another member"
        case .forgedDownNotice: "an unproved \"you are down\", as another member"
        case .gossipBeforeProof: "gossip before the proof, as another member"
        }
    }
}

/// A fault and when it happens.
public struct ScheduledFault: Sendable, Hashable, CustomStringConvertible {
    public let at: Duration
    public let fault: SimulatedFault

    public init(at: Duration, _ fault: SimulatedFault) {
        self.at = at
        self.fault = fault
    }

    public var description: String { "at \(at): \(fault)" }
}
