import NIOCore

/// How frames travel between nodes: a listener, outbound connections, and ordered frames on
/// each. ``NIOTransport`` (TCP) is the default; a TLS or gRPC transport, or a wrapper that
/// injects faults (``FaultInjectingTransport``), conforms to the same protocol. Handshakes,
/// authentication and envelopes are the cluster's business, above any transport.
public protocol ClusterTransport: Sendable {
    /// Starts accepting connections on `host`:`port` (port 0: any free port) and returns the
    /// port bound. Each accepted connection is passed to `accept`, which starts it.
    ///
    /// `maximumFrameSize` is the limit before the peer has proved the cluster secret (small:
    /// ``ClusterConnectionLimits/unauthenticatedFrameSize``); the cluster raises it per
    /// connection with ``ClusterConnection/peerAuthenticated(maximumFrameSize:incompleteFrameTimeout:)``.
    /// A transport must refuse a longer frame before buffering it.
    func listen(
        host: String, port: Int, maximumFrameSize: Int,
        accept: @escaping @Sendable (any ClusterConnection) -> Void
    ) async throws -> Int

    /// Opens a connection to `host`:`port`. Throws ``ClusterTransportError/connectionRefused(host:port:)``
    /// when nothing listens there (the cluster takes that as evidence that a member is gone),
    /// ``ClusterTransportError/unreachable(host:port:reason:)`` for anything else.
    func connect(host: String, port: Int, maximumFrameSize: Int) async throws -> any ClusterConnection

    /// Stops listening and closes every connection. Dials in progress end (with an error) before
    /// it returns: nothing the transport started may still be running after it.
    func shutdown() async

    /// Whether connections are encrypted and integrity-protected (TLS). A cluster bound to an
    /// address other than loopback on a transport that is not logs a warning at start.
    var encryptsTraffic: Bool { get }
}

extension ClusterTransport {
    public var encryptsTraffic: Bool { false }
}

/// One connection between two nodes.
///
/// Contract: frames are delivered to the handler one at a time and in order (never
/// concurrently with each other), then `closed` exactly once; ``send(_:)`` may be called from
/// any thread, and frames sent from one thread arrive in the order they were sent.
public protocol ClusterConnection: AnyObject, Sendable {
    /// Starts delivering inbound frames (each an envelope without its length prefix) and the
    /// close to `handler`. Called once; frames that arrived before are delivered first.
    func start(_ handler: any ClusterConnectionHandler)
    /// Queues one frame (length prefix included, as the cluster's envelope encoder writes it) and flushes.
    /// Frames sent after the connection closed are dropped.
    func send(_ frame: ByteBuffer)
    /// Closes the connection; the handler's `closed` follows.
    func close()
    /// The peer's address, for logs.
    var peerDescription: String { get }
    /// The peer's host address (no port), which admission control counts connections and
    /// handshakes by; nil if unknown (all such connections then share one count).
    var remoteHost: String? { get }
    /// The peer proved the cluster secret: frames up to `maximumFrameSize` are accepted from
    /// now on (until now, only the small limit given to `listen`/`connect`), and a frame that
    /// has started must be complete within `incompleteFrameTimeout`, or the connection closes
    /// with ``WireError/incompleteFrame(received:announced:timeout:)``. Called on the delivery
    /// sequence, after the frame that completed the handshake.
    func peerAuthenticated(maximumFrameSize: Int, incompleteFrameTimeout: Duration)
}

extension ClusterConnection {
    public var remoteHost: String? { nil }
    /// By default nothing is raised: a transport that does not implement it keeps the
    /// unauthenticated limit (safe, but frames above it close the connection).
    public func peerAuthenticated(maximumFrameSize: Int, incompleteFrameTimeout: Duration) {}
}

/// What a connection reports to. See ``ClusterConnection`` for the ordering contract.
public protocol ClusterConnectionHandler: AnyObject, Sendable {
    func received(_ frame: ByteBuffer, on connection: any ClusterConnection)
    func closed(_ connection: any ClusterConnection, error: (any Error)?)
}

/// Why a transport could not connect.
public enum ClusterTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Nothing listens at that address.
    case connectionRefused(host: String, port: Int)
    /// Anything else (timeout, no route, transport shut down).
    case unreachable(host: String, port: Int, reason: String)

    public var description: String {
        switch self {
        case .connectionRefused(let host, let port): "connection to \(host):\(port) refused"
        case .unreachable(let host, let port, let reason): "cannot reach \(host):\(port): \(reason)"
        }
    }
}
