internal import TroupeLocks
import NIOCore
import Synchronization
import TroupeClusterMembership

/// Wraps a transport to lose and delay frames, for testing what a real network does to a
/// cluster (loss, latency) without root or netem. Faults apply to frames in both directions,
/// after the handshake or during it alike; connections stay open, so only the membership
/// protocol and call timeouts notice.
///
/// Thread-safety: the fault settings may be changed from any thread at any time.
public final class FaultInjectingTransport: ClusterTransport {
    private let base: any ClusterTransport
    private let faults = Locked(Faults())

    struct Faults {
        var dropAll = false
        var lossRate = 0.0
        var delay: Duration = .zero
        var generator = SplitMix(seed: 0x5EED)

        /// Whether to drop one frame.
        mutating func drops() -> Bool {
            if dropAll { return true }
            guard lossRate > 0 else { return false }
            return Double(generator.next() >> 11) / Double(1 << 53) < lossRate
        }
    }

    public init(_ base: any ClusterTransport) { self.base = base }

    /// Drops every frame while `true`.
    public func dropEverything(_ drop: Bool) { faults.withLock { $0.dropAll = drop } }

    /// Drops each frame with probability `rate` (0...1), from a seeded generator.
    public func setLoss(_ rate: Double, seed: UInt64 = 0x5EED) {
        precondition((0...1).contains(rate), "loss rate must be within 0...1, got \(rate)")
        faults.withLock {
            $0.lossRate = rate
            $0.generator = SplitMix(seed: seed)
        }
    }

    /// Delays every frame by `delay`, keeping each connection's order.
    public func setDelay(_ delay: Duration) { faults.withLock { $0.delay = delay } }

    /// From now on, nothing that the connections this transport dialled to `port` (those open
    /// now; not later ones) send arrives, and the connections stay open: to the peer, the same
    /// as a TCP connection waiting to retransmit a lost segment, which holds everything sent
    /// after it until it closes. (The frames are dropped at once.) Returns how many
    /// connections it stalled.
    @discardableResult
    public func stallConnections(toPort port: Int) -> Int {
        let open = dialled.withLock { dialled in
            dialled.removeAll { $0.connection.value == nil }
            return dialled.filter { $0.port == port }.compactMap(\.connection.value)
        }
        for connection in open { connection.stall() }
        return open.count
    }

    /// The connections this transport dialled, and to which port.
    private let dialled = Locked<[(port: Int, connection: WeakConnection)]>([])

    private struct WeakConnection {
        weak var value: FaultyConnection?
    }

    func decide() -> (drop: Bool, delay: Duration) {
        faults.withLock { ($0.drops(), $0.delay) }
    }

    public func listen(
        host: String, port: Int, maximumFrameSize: Int, accept: @escaping @Sendable (any ClusterConnection) -> Void
    ) async throws -> Int {
        try await base.listen(host: host, port: port, maximumFrameSize: maximumFrameSize) { connection in
            accept(FaultyConnection(base: connection, transport: self))
        }
    }

    public func connect(host: String, port: Int, maximumFrameSize: Int) async throws -> any ClusterConnection {
        let connection = FaultyConnection(
            base: try await base.connect(host: host, port: port, maximumFrameSize: maximumFrameSize), transport: self)
        dialled.withLock { dialled in
            dialled.removeAll { $0.connection.value == nil }
            dialled.append((port, WeakConnection(value: connection)))
        }
        return connection
    }

    public func shutdown() async { await base.shutdown() }

    public var encryptsTraffic: Bool { base.encryptsTraffic }
}

/// A connection whose frames the transport's faults drop or delay.
// @unchecked: `handler` is set once in start, before frames flow; the delay queue is locked.
final class FaultyConnection: ClusterConnection, ClusterConnectionHandler, @unchecked Sendable {
    let base: any ClusterConnection
    let transport: FaultInjectingTransport
    private var handler: (any ClusterConnectionHandler)?
    /// Delayed outbound frames in order, with the instant each is due, and whether a task drains them.
    private let delayed = Locked<(frames: [(due: ContinuousClock.Instant, frame: ByteBuffer)], draining: Bool)>(
        ([], false))

    /// Set by ``FaultInjectingTransport/stallConnections(toPort:)``: nothing more is sent.
    /// Relaxed: the flag guards no other memory, and a frame sent while the stall is being set
    /// may go either way.
    private let stalled = Atomic<Bool>(false)

    func stall() { stalled.store(true, ordering: .relaxed) }

    init(base: any ClusterConnection, transport: FaultInjectingTransport) {
        self.base = base
        self.transport = transport
    }

    var peerDescription: String { base.peerDescription }
    var remoteHost: String? { base.remoteHost }

    func peerAuthenticated(maximumFrameSize: Int, incompleteFrameTimeout: Duration) {
        base.peerAuthenticated(maximumFrameSize: maximumFrameSize, incompleteFrameTimeout: incompleteFrameTimeout)
    }

    func start(_ handler: any ClusterConnectionHandler) {
        self.handler = handler
        base.start(self)
    }

    func send(_ frame: ByteBuffer) {
        let (drop, delay) = transport.decide()
        if drop || stalled.load(ordering: .relaxed) { return }
        let startDrain = delayed.withLock { state -> Bool? in
            if delay == .zero && state.frames.isEmpty { return nil }
            state.frames.append((ContinuousClock.now + delay, frame))
            if state.draining { return false }
            state.draining = true
            return true
        }
        switch startDrain {
        case nil: base.send(frame)
        case true?: Task { await drain() }
        case false?: break
        }
    }

    /// Sends the delayed frames in order, each once it is due. The send happens under the
    /// queue's lock (it only queues on the base connection), so a frame sent directly after
    /// the queue empties cannot overtake the last delayed one.
    private func drain() async {
        while let due = delayed.withLock({ $0.frames.first?.due }) {
            try? await Task.sleep(until: due)
            let more = delayed.withLock { state -> Bool in
                let next = state.frames.removeFirst()
                base.send(next.frame)
                if state.frames.isEmpty { state.draining = false }
                return !state.frames.isEmpty
            }
            if !more { return }
        }
    }

    func close() { base.close() }

    func received(_ frame: ByteBuffer, on connection: any ClusterConnection) {
        if transport.decide().drop { return }
        handler?.received(frame, on: self)
    }

    func closed(_ connection: any ClusterConnection, error: (any Error)?) {
        handler?.closed(self, error: error)
    }
}
