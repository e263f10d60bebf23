/// What a run measured: crashes and how fast they were seen, joins and how fast they spread,
/// suspicions and downs of members that were up, and the membership traffic.
public struct SimulationReport: Sendable {
    /// A node killed or vanished, and when the others saw it.
    public struct Crash: Sendable {
        public let node: Int
        public let at: Duration
        public let silent: Bool
        /// After the crash: the first suspicion of it anywhere.
        public internal(set) var firstSuspicion: Duration?
        /// After the crash, for each node that suspected it: when it did (by its own probe or on
        /// hearing it in gossip). With ``unreachableAfter``, it splits a node's detection time
        /// into the suspicion's spread and the node's own suspicion timer.
        public internal(set) var suspectedAfter: [Int: Duration] = [:]
        /// After the crash, for each node that was up throughout: when it saw the crashed node
        /// unreachable (SWIM's failure declaration) and when down (removed).
        public internal(set) var unreachableAfter: [Int: Duration] = [:]
        public internal(set) var downAfter: [Int: Duration] = [:]
        /// The nodes running and knowing it when it crashed (who should all see it).
        public internal(set) var witnesses: [Int] = []
        /// Their runs' uids: a witness restarted since is another run, which need not.
        var witnessUIDs: [UInt64] = []

        /// When every witness had seen it unreachable, down; nil if one has not.
        public var unreachableEverywhere: Duration? { latest(unreachableAfter) }
        public var downEverywhere: Duration? { latest(downAfter) }

        private func latest(_ seen: [Int: Duration]) -> Duration? {
            var latest = Duration.zero
            for witness in witnesses {
                guard let at = seen[witness] else { return nil }
                latest = max(latest, at)
            }
            return latest
        }
    }

    /// A node that joined (or restarted as a new member), and when every other node had it alive.
    public struct Join: Sendable {
        public let node: Int
        public let at: Duration
        public internal(set) var convergedAfter: Duration?
        /// When each other node first had it alive, until the join converged.
        public internal(set) var seenAliveAfter: [Int: Duration] = [:]
    }

    /// A property a run broke, with the virtual time it was found at.
    public struct Violation: Sendable, CustomStringConvertible {
        public enum Kind: String, Sendable {
            /// A member was declared down while up, reachable, and not paused beyond the limit.
            case falseDown
            /// A crashed member was not seen down by a node that was up throughout, in time.
            case undetectedCrash
            /// After the last fault and the settling time, two live nodes disagree.
            case notConverged
            /// A peer that does not know the cluster secret completed a handshake, or its
            /// connection removed a member.
            case strangerAdmitted
            /// After the settling time, a node's listing of a member it has alive is not what
            /// the member checked in, or it lists a member it holds down.
            case staleListing
        }

        public let kind: Kind
        public let at: Duration
        public let detail: String

        public var description: String { "\(kind.rawValue) at \(at): \(detail)" }
    }

    public let nodes: Int
    public internal(set) var simulated: Duration = .zero
    public internal(set) var crashes: [Crash] = []
    public internal(set) var joins: [Join] = []
    /// Suspicions (by one node of another) of members that were up at that instant.
    public internal(set) var falseSuspicions = 0
    /// Suspicions of members neither paused nor overloaded lately (within the horizon a
    /// suspicion can last): the mistakes Lifeguard is meant to prevent, as when the observer is
    /// the slow one.
    public internal(set) var falseSuspicionsOfHealthyMembers = 0
    /// Members declared down while up; those not explained are also violations.
    public internal(set) var falseDowns = 0
    public internal(set) var violations: [Violation] = []
    /// Running members that a handshake's proved "you are down" told that the cluster removed
    /// them (after a false down, explained or not), which then stopped as a removed
    /// TroupeCluster node does.
    public internal(set) var removals = 0
    /// Handshakes (TroupeCluster's state machine at both ends) completed at the responder,
    /// and the ends that failed one: refused it or were refused (a proved "you are down"
    /// included), as `ClusterSystem` counts them.
    public internal(set) var handshakesCompleted = 0
    public internal(set) var handshakeFailures = 0
    /// Envelopes a handshake had no place for (before the proof, or an unproved "you are
    /// down"): each closed its connection, as `ClusterSystem` counts them.
    public internal(set) var protocolViolations = 0
    /// Strangers' connections, and those of them the dialled node refused or closed on a
    /// violation (the rest were lost or cut on the way).
    /// Receptionist updates sent (snapshots on association, check-ins and check-outs).
    public internal(set) var receptionistUpdates = 0
    public internal(set) var strangerConnections = 0
    public internal(set) var strangersRefused = 0
    /// Membership messages and their bytes on the wire (TroupeCluster's frames), sent by all
    /// nodes, and the node-seconds the nodes were up (the denominator of the rates).
    public internal(set) var messagesSent = 0
    public internal(set) var bytesSent = 0
    public internal(set) var nodeSeconds = 0.0
    /// Events the simulator processed (ticks, deliveries, faults), for its own cost.
    public internal(set) var eventsProcessed = 0

    public var messagesPerNodeSecond: Double { nodeSeconds > 0 ? Double(messagesSent) / nodeSeconds : 0 }
    public var bytesPerNodeSecond: Double { nodeSeconds > 0 ? Double(bytesSent) / nodeSeconds : 0 }
    public var nodeHours: Double { nodeSeconds / 3_600 }
}
