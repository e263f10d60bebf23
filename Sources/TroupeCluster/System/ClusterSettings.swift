import CoreMetrics
import Logging
import TroupeClusterMembership

// The membership types live in TroupeClusterMembership (SWIM as a pure state machine, not a
// product) under the names users see; these aliases make them TroupeCluster's API.

/// A node of the cluster: its address and the uid it drew when it started (a node restarted on
/// the same address is a new node).
public typealias ClusterNode = TroupeClusterMembership.ClusterNode
/// A node's status as this node sees it (SWIM: alive, suspect, unreachable, down).
public typealias ClusterMemberStatus = TroupeClusterMembership.ClusterMemberStatus
/// One change of a node's status.
public typealias ClusterMembershipEvent = TroupeClusterMembership.ClusterMembershipEvent
/// SWIM's timing and fan-out (``ClusterSettings/membership``).
public typealias ClusterMembershipSettings = TroupeClusterMembership.ClusterMembershipSettings

/// How a ``ClusterSystem`` binds, finds its peers, proves itself and times things.
public struct ClusterSettings: Sendable {
    /// Nodes with different names refuse each other at the handshake.
    public var clusterName: String
    /// The address to bind and to advertise (peers connect to it): `127.0.0.1` by default.
    public var host: String
    /// The port to bind; 0 picks a free one (``ClusterSystem/node`` says which).
    public var port: Int
    /// Nodes to join through (`host`, `port`); this node's own address is skipped, so every
    /// node of a cluster can be given the same list.
    public var seeds: [(host: String, port: Int)]
    /// The shared secret every node proves it knows at the handshake (HMAC-SHA256
    /// challenge-response; never sent). At least 16 bytes of UTF-8.
    public var secret: String
    /// How long a remote call waits for its reply, unless it is made inside
    /// ``ClusterSystem/withCallTimeout(_:isolation:_:)``.
    public var callTimeout: Duration
    /// Frames above this size close the connection (default 8 MiB). Before a peer has proved
    /// the secret, the much smaller ``ClusterConnectionLimits/unauthenticatedFrameSize`` applies.
    public var maximumFrameSize: Int
    /// How long a handshake may take before the connection is closed.
    public var handshakeTimeout: Duration
    /// What a connection may cost before and after its peer proves the secret: frame sizes,
    /// connection counts, handshake rate, read timeouts (see <doc:RunningACluster#Threat-model>).
    public var limits: ClusterConnectionLimits
    /// SWIM's timing (probe interval, ping timeout, suspicion, downing). Values out of range
    /// (`ClusterMembershipSettings.problem`) make the system's init throw
    /// ``ClusterStartError/invalidSetting(_:)``.
    public var membership: ClusterMembershipSettings
    /// How arguments and results are encoded (default ``BinaryClusterCoder``; ``JSONClusterCoder``
    /// is readable). Every node of a cluster must use the same.
    public var coder: any ClusterCoder
    /// How frames travel (default ``NIOTransport`` over TCP).
    public var transport: (any ClusterTransport)?
    public var logger: Logger
    /// Where the cluster's counters go (see <doc:RunningACluster#In-a-service>): by default
    /// the backend `MetricsSystem.bootstrap` installed, read when the cluster system starts.
    public var metricsFactory: (any MetricsFactory)?

    public init(
        clusterName: String = "troupe",
        host: String = "127.0.0.1",
        port: Int = 0,
        seeds: [(host: String, port: Int)] = [],
        secret: String,
        callTimeout: Duration = .seconds(5),
        maximumFrameSize: Int = 8 << 20,
        handshakeTimeout: Duration = .seconds(5),
        limits: ClusterConnectionLimits = ClusterConnectionLimits(),
        membership: ClusterMembershipSettings = ClusterMembershipSettings(),
        coder: any ClusterCoder = BinaryClusterCoder(),
        transport: (any ClusterTransport)? = nil,
        logger: Logger = Logger(label: "troupe.cluster"),
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.clusterName = clusterName
        self.host = host
        self.port = port
        self.seeds = seeds
        self.secret = secret
        self.callTimeout = callTimeout
        self.maximumFrameSize = maximumFrameSize
        self.handshakeTimeout = handshakeTimeout
        self.limits = limits
        self.membership = membership
        self.coder = coder
        self.transport = transport
        self.logger = logger
        self.metricsFactory = metricsFactory
    }
}

/// What one node spends on connections, so that nothing a host without the secret sends can
/// exhaust it: every limit applies before a byte of the peer's is trusted.
public struct ClusterConnectionLimits: Sendable, Hashable {
    /// The largest frame read before the peer has proved the secret (a hello is ~100 bytes,
    /// plus the cluster name and host). Default 4 KiB.
    public var unauthenticatedFrameSize: Int
    /// Connections open at once, in both directions; more are closed as they arrive. Keep it
    /// below the process's descriptor limit (`ulimit -n`). Default 512.
    public var maximumConnections: Int
    /// Inbound connections still handshaking at once. Default 64.
    public var maximumUnauthenticatedConnections: Int
    /// Inbound connections still handshaking at once from one host address. Default 8.
    public var maximumUnauthenticatedConnectionsPerHost: Int
    /// Handshakes one host address may start per second (bursts of twice that). Default 20.
    public var handshakesPerSecondPerHost: Double
    /// After the handshake, how long a frame may take to arrive once it has started; a peer
    /// that stops in the middle of a frame is disconnected. Default 10 seconds.
    public var incompleteFrameTimeout: Duration
    /// Warnings about bad connections (refused handshakes, protocol violations, connections
    /// over a limit) are logged at most once per interval per kind, with a count of the rest.
    /// Default 10 seconds.
    public var warningInterval: Duration
    /// After this many probes of a member in a row answered only through other members (the
    /// member is up, but its own connection delivers nothing: after a partition heals, a TCP
    /// connection can wait minutes to retransmit a segment, and holds every later frame behind
    /// it), the connection to it is closed and dialled again, and the calls waiting on it fail
    /// as ``ClusterCallError/nodeUnreachable(_:reason:)``. Any frame straight from the member
    /// starts the count again. 0 never closes. Default 3 (with 1 s probes and N members, a
    /// member is probed about once every N − 1 seconds).
    public var reconnectAfterIndirectAnswers = 3

    public init(
        unauthenticatedFrameSize: Int = 4096,
        maximumConnections: Int = 512,
        maximumUnauthenticatedConnections: Int = 64,
        maximumUnauthenticatedConnectionsPerHost: Int = 8,
        handshakesPerSecondPerHost: Double = 20,
        incompleteFrameTimeout: Duration = .seconds(10),
        warningInterval: Duration = .seconds(10)
    ) {
        self.unauthenticatedFrameSize = unauthenticatedFrameSize
        self.maximumConnections = maximumConnections
        self.maximumUnauthenticatedConnections = maximumUnauthenticatedConnections
        self.maximumUnauthenticatedConnectionsPerHost = maximumUnauthenticatedConnectionsPerHost
        self.handshakesPerSecondPerHost = handshakesPerSecondPerHost
        self.incompleteFrameTimeout = incompleteFrameTimeout
        self.warningInterval = warningInterval
    }

    /// Why the limits cannot be used, or nil.
    var problem: String? {
        if unauthenticatedFrameSize < 512 {
            return "limits.unauthenticatedFrameSize \(unauthenticatedFrameSize) is below 512 bytes"
        }
        if maximumConnections < 1 { return "limits.maximumConnections must be at least 1" }
        if maximumUnauthenticatedConnections < 1 {
            return "limits.maximumUnauthenticatedConnections must be at least 1"
        }
        if maximumUnauthenticatedConnectionsPerHost < 1 {
            return "limits.maximumUnauthenticatedConnectionsPerHost must be at least 1"
        }
        if !(handshakesPerSecondPerHost > 0) { return "limits.handshakesPerSecondPerHost must be positive" }
        if incompleteFrameTimeout <= .zero { return "limits.incompleteFrameTimeout must be positive" }
        if reconnectAfterIndirectAnswers < 0 {
            return
                "limits.reconnectAfterIndirectAnswers is a count, 0 (never) or more, not \(reconnectAfterIndirectAnswers)"
        }
        return nil
    }
}

/// Why a ``ClusterSystem`` could not start.
public enum ClusterStartError: Error, Sendable, CustomStringConvertible {
    /// The secret is shorter than 16 bytes.
    case secretTooShort(bytes: Int)
    /// A setting is out of range.
    case invalidSetting(String)
    /// The transport could not bind.
    case bindFailed(host: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case .secretTooShort(let bytes):
            "the cluster secret has \(bytes) bytes; use at least 16 (ClusterSettings.secret), the same on every node"
        case .invalidSetting(let what): "invalid cluster setting: \(what)"
        case .bindFailed(let host, let port, let reason): "cannot listen on \(host):\(port): \(reason)"
        }
    }
}
