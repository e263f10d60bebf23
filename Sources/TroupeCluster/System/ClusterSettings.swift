import CoreMetrics
import Logging
import TroupeClusterMembership

/// A node of the cluster: its address and the uid it drew when it started (a node restarted on
/// the same address is a new node).
public typealias ClusterNode = MemberID
/// A node's status as this node sees it (SWIM: alive, suspect, unreachable, down).
public typealias ClusterMemberStatus = MemberStatus
/// One change of a node's status.
public typealias ClusterMembershipEvent = MembershipEvent
/// SWIM's timing and fan-out (``ClusterSettings/membership``).
public typealias ClusterMembershipSettings = SWIMSettings

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
    /// How long a remote call waits for its reply unless the call says otherwise.
    public var callTimeout: Duration
    /// Frames above this size close the connection (default 8 MiB).
    public var maximumFrameSize: Int
    /// How long a handshake may take before the connection is closed.
    public var handshakeTimeout: Duration
    /// SWIM's timing (probe interval, ping timeout, suspicion, downing).
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
        self.membership = membership
        self.coder = coder
        self.transport = transport
        self.logger = logger
        self.metricsFactory = metricsFactory
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
