internal import TroupeLocks
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// TCP over SwiftNIO: one listening socket, `TCP_NODELAY` connections, frames split by one
/// handler per connection (`NIOFrameHandler`). Owns its event loops (`threads`, default 1: on a
/// small machine the cluster's I/O should not compete with Troupe's workers for cores).
///
/// With a ``NIOTransportSecurity`` (the `TroupeClusterTLS` product's `ClusterTLS`: TLS with
/// mutual authentication on swift-nio-ssl), every connection is encrypted and both ends present
/// certificates; the cluster's own handshake then runs inside TLS.
public final class NIOTransport: ClusterTransport {
    private let group: MultiThreadedEventLoopGroup
    private let channels = Locked<[ObjectIdentifier: any Channel]>([:])
    private let connectTimeout: TimeAmount
    private let security: (any NIOTransportSecurity)?
    /// Set by `shutdown`: connections then drop sends and closes instead of scheduling work
    /// on event loops that are gone.
    private let stopped = StoppedFlag()
    private let dials = Locked(DialsInFlight())

    /// - Parameters:
    ///   - threads: event-loop threads.
    ///   - connectTimeout: how long a dial may take.
    ///   - security: what secures each connection (for example `ClusterTLS`); nil for plain TCP.
    public init(threads: Int = 1, connectTimeout: Duration = .seconds(2), security: (any NIOTransportSecurity)? = nil) {
        precondition(threads > 0, "NIOTransport(threads:) needs at least one thread, got \(threads)")
        self.security = security
        group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        self.connectTimeout = TimeAmount(connectTimeout)
    }

    public func listen(
        host: String, port: Int, maximumFrameSize: Int,
        accept: @escaping @Sendable (any ClusterConnection) -> Void
    ) async throws -> Int {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    accept(try self.connection(on: channel, as: .server, peerHost: nil, frameLimit: maximumFrameSize))
                }
            }
        let server = try await bootstrap.bind(host: host, port: port).get()
        channels.withLock { $0[ObjectIdentifier(server)] = server }
        return server.localAddress?.port ?? port
    }

    public func connect(host: String, port: Int, maximumFrameSize: Int) async throws -> any ClusterConnection {
        guard !stopped.isSet, let dial = dials.withLock({ $0.begin() }) else {
            throw ClusterTransportError.unreachable(host: host, port: port, reason: "the transport has shut down")
        }
        defer {
            for waiter in dials.withLock({ $0.end(dial) }) { waiter.resume() }
        }
        // The initializer hands the connection over here, so that nothing is asked of the
        // channel's event loop after the connect (it may be shutting down by then).
        let made = Locked<NIOClusterConnection?>(nil)
        let bootstrap = ClientBootstrap(group: group)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(connectTimeout)
            .channelInitializer { channel in
                guard self.dials.withLock({ $0.attempt(channel, for: dial) }) else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                return channel.eventLoop.makeCompletedFuture {
                    let connection = try self.connection(
                        on: channel, as: .client, peerHost: host, frameLimit: maximumFrameSize)
                    made.withLock { $0 = connection }
                }
            }
        do {
            _ = try await bootstrap.connect(host: host, port: port).get()
        } catch let error as NIOConnectionError {
            let refused = error.connectionErrors.contains { ($0.error as? IOError)?.errnoCode == ECONNREFUSED }
            if refused { throw ClusterTransportError.connectionRefused(host: host, port: port) }
            throw ClusterTransportError.unreachable(host: host, port: port, reason: "\(error)")
        } catch let error as IOError where error.errnoCode == ECONNREFUSED {
            throw ClusterTransportError.connectionRefused(host: host, port: port)
        } catch {
            throw ClusterTransportError.unreachable(host: host, port: port, reason: "\(error)")
        }
        guard let connection = made.withLock({ $0 }) else {
            throw ClusterTransportError.unreachable(host: host, port: port, reason: "the channel was not initialised")
        }
        return connection
    }

    /// Dials in progress (for tests: none may outlive `shutdown`).
    var dialsInFlight: Int { dials.withLock { $0.count } }

    /// Sets up a new channel, on its event loop: security first (TLS, when configured), then
    /// the frame handler that feeds the connection.
    private func connection(
        on channel: any Channel, as side: NIOTransportSide, peerHost: String?, frameLimit: Int
    ) throws -> NIOClusterConnection {
        try security?.secure(channel, as: side, peerHost: peerHost)
        let connection = NIOClusterConnection(channel: channel, stopped: stopped, frameLimit: frameLimit)
        try channel.pipeline.syncOperations.addHandler(NIOFrameHandler(connection: connection))
        return connection
    }

    public var encryptsTraffic: Bool { security?.encryptsTraffic ?? false }

    /// Closes every channel, ends the dials in progress (closing their attempts; a dial still
    /// resolving its host ends within `connectTimeout`), then stops the event loops.
    public func shutdown() async {
        guard !stopped.flag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let open = channels.withLock { channels in
            defer { channels.removeAll() }
            return Array(channels.values)
        }
        for channel in open { try? await channel.close() }
        for attempt in dials.withLock({ $0.close() }) { attempt.close(promise: nil) }
        // The loops must outlive every dial: a connect whose loop has stopped never completes.
        await withCheckedContinuation { waiter in
            if dials.withLock({ $0.drained(orWait: waiter) }) { waiter.resume() }
        }
        try? await group.shutdownGracefully()
    }
}

/// What secures a ``NIOTransport``'s connections: handlers added at the front of each new
/// channel's pipeline, before the cluster's framing (TLS, for example).
public protocol NIOTransportSecurity: Sendable {
    /// Whether the handlers encrypt and authenticate the traffic (``ClusterTransport/encryptsTraffic``).
    var encryptsTraffic: Bool { get }
    /// Adds the handlers to a new `channel`, on its event loop (use
    /// `channel.pipeline.syncOperations`). `peerHost` is the host dialled (`.client` only).
    /// Throwing closes the connection.
    func secure(_ channel: any Channel, as side: NIOTransportSide, peerHost: String?) throws
}

/// Which end of a connection a ``NIOTransportSecurity`` is securing.
public enum NIOTransportSide: Sendable, Hashable {
    /// The accepting end.
    case server
    /// The dialling end.
    case client
}

/// A NIO channel as a ``ClusterConnection``. `handler` and `early` are touched only on the
/// channel's event loop.
// @unchecked: its mutable state is confined to `channel.eventLoop`.
final class NIOClusterConnection: ClusterConnection, @unchecked Sendable {
    let channel: any Channel
    private var handler: (any ClusterConnectionHandler)?
    /// Frames that arrived before `start`.
    private var early: [ByteBuffer] = []
    private var closedBeforeStart: (any Error)?? = nil
    private var closeReported = false
    /// The error that closed the channel, reported with the close.
    var closingError: (any Error)?

    private let stopped: StoppedFlag

    init(channel: any Channel, stopped: StoppedFlag, frameLimit: Int) {
        self.channel = channel
        self.stopped = stopped
        self.frameLimit = frameLimit
    }

    var peerDescription: String { channel.remoteAddress.map { "\($0)" } ?? "unknown peer" }
    var remoteHost: String? { channel.remoteAddress?.ipAddress }

    /// The largest frame accepted now: the unauthenticated limit given at `listen`/`connect`
    /// until ``peerAuthenticated(maximumFrameSize:incompleteFrameTimeout:)`` raises it. Event
    /// loop only, so it skips the run-time exclusivity check (read once per frame).
    @exclusivity(unchecked) var frameLimit: Int
    /// Set once the peer is authenticated: how long a started frame may stay incomplete.
    /// Event loop only (as `frameLimit`).
    @exclusivity(unchecked) var incompleteFrameTimeout: TimeAmount?

    func peerAuthenticated(maximumFrameSize: Int, incompleteFrameTimeout: Duration) {
        let timeout = TimeAmount(incompleteFrameTimeout)
        if channel.eventLoop.inEventLoop {
            frameLimit = maximumFrameSize
            self.incompleteFrameTimeout = timeout
        } else {
            channel.eventLoop.execute {
                self.frameLimit = maximumFrameSize
                self.incompleteFrameTimeout = timeout
            }
        }
    }

    func start(_ handler: any ClusterConnectionHandler) {
        guard !stopped.isSet else { return }
        channel.eventLoop.execute {
            self.handler = handler
            let frames = self.early
            self.early = []
            for frame in frames { handler.received(frame, on: self) }
            if let error = self.closedBeforeStart { self.reportClosed(error) }
        }
    }

    /// Frames sent from other threads wait here; the sender that finds it empty schedules one
    /// task that writes them all and flushes once (as a mailbox schedules its actor), so a
    /// burst of calls costs one event-loop wake-up and one `writev`, not one of each per frame.
    private let outbox = Locked<(frames: [ByteBuffer], scheduled: Bool)>(([], false))

    /// Whether the event loop is delivering this connection's frames right now (between a read
    /// and its read-complete). Frames it sends meanwhile (replies of invocations run right
    /// there) are flushed together: at the read-complete, or as soon as
    /// ``framesPerBurstFlush`` are waiting, so the peer starts on the first replies while this
    /// side makes the rest (one flush per whole burst would keep the two nodes in lock-step,
    /// each idle while the other works). Event loop only.
    private var readingBurst = false
    private var unflushed = 0
    /// 8, 16 and 32 measured alike with 64 and 1,024 calls in flight (within this VM's noise);
    /// 16 still splits a burst of 32 in two.
    static let framesPerBurstFlush = 16
    /// The small frames of a burst (and of an outbox), copied into one buffer that is written
    /// with one `write` when they are flushed: a write through the channel's pipeline cost ~2,400
    /// instructions per frame (callgrind), copying a frame of a call or a reply a few hundred.
    /// Frames larger than ``coalescedFrameLimit`` are written as they are, after what was
    /// gathered before them. Event loop only.
    private var coalesced = ByteBuffer()
    static let coalescedFrameLimit = 4096

    func send(_ frame: ByteBuffer) {
        guard !stopped.isSet else { return }
        if channel.eventLoop.inEventLoop {
            if readingBurst {
                write(frame)
                unflushed += 1
                if unflushed == Self.framesPerBurstFlush {
                    unflushed = 0
                    flushWritten()
                }
                return
            }
            return channel.writeAndFlush(frame, promise: nil)
        }
        let schedule = outbox.withLock { outbox -> Bool in
            outbox.frames.append(frame)
            if outbox.scheduled { return false }
            outbox.scheduled = true
            return true
        }
        if schedule { channel.eventLoop.execute { self.flushOutbox() } }
    }

    /// Event loop.
    private func flushOutbox() {
        channel.eventLoop.assertInEventLoop()
        let frames = outbox.withLock { outbox in
            defer {
                outbox.frames.removeAll(keepingCapacity: true)
                outbox.scheduled = false
            }
            return outbox.frames
        }
        if frames.count == 1 { return channel.writeAndFlush(frames[0], promise: nil) }
        for frame in frames { write(frame) }
        flushWritten()
    }

    /// Gathers a small frame, or writes a large one after what was gathered. Event loop.
    private func write(_ frame: ByteBuffer) {
        channel.eventLoop.assertInEventLoop()
        guard frame.readableBytes <= Self.coalescedFrameLimit else {
            writeCoalesced()
            return channel.write(frame, promise: nil)
        }
        coalesced.writeImmutableBuffer(frame)
    }

    /// Writes the gathered frames as one buffer. Event loop.
    private func writeCoalesced() {
        channel.eventLoop.assertInEventLoop()
        guard coalesced.readableBytes > 0 else { return }
        channel.write(coalesced, promise: nil)
        // The channel holds the written bytes until the socket takes them: start a new buffer.
        coalesced = channel.allocator.buffer(capacity: 1024)
    }

    /// Writes what was gathered and flushes everything written. Event loop.
    private func flushWritten() {
        channel.eventLoop.assertInEventLoop()
        writeCoalesced()
        channel.flush()
    }

    func close() {
        guard !stopped.isSet else { return }
        if channel.eventLoop.inEventLoop && unflushed > 0 {
            // Frames written in this read burst (a refusal, say) go out before the close.
            unflushed = 0
            flushWritten()
        }
        channel.close(promise: nil)
    }

    /// Event loop.
    func deliver(_ frame: ByteBuffer) {
        channel.eventLoop.assertInEventLoop()
        readingBurst = true
        if let handler { handler.received(frame, on: self) } else { early.append(frame) }
    }

    /// The end of a burst of reads. Event loop.
    func deliveredBurst() {
        channel.eventLoop.assertInEventLoop()
        readingBurst = false
        if unflushed > 0 {
            unflushed = 0
            flushWritten()
        }
    }

    /// Event loop.
    func reportClosed(_ error: (any Error)?) {
        channel.eventLoop.assertInEventLoop()
        guard let handler else {
            closedBeforeStart = .some(error)
            return
        }
        guard !closeReported else { return }
        closeReported = true
        handler.closed(self, error: error)
        self.handler = nil
    }
}

/// The one handler of a cluster connection's pipeline: splits the bytes read into frames
/// (``FrameDecoder``, with the connection's current ``NIOClusterConnection/frameLimit``) and
/// hands each to the connection, then the end of each read burst, the close and errors.
///
/// It frames the bytes itself instead of using NIO's `ByteToMessageHandler` in front of a
/// second handler: that generic pair cost ~3,900 instructions per frame (callgrind: metadata
/// lookups of its unspecialized generics, a pipeline hop and a boxed value per frame), this
/// one a few hundred. Event loop only.
///
/// Memory: a frame in progress is kept in a buffer of its own that grows with the bytes that
/// actually arrive (a length prefix is only the peer's word until then), and is released when
/// the frame completes or the connection closes. Once the peer is authenticated, a frame that
/// stays incomplete for the connection's ``NIOClusterConnection/incompleteFrameTimeout``
/// closes the connection.
// @unchecked: `pending`, `failed` and `pendingGeneration` are only touched on the channel's event loop.
final class NIOFrameHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let connection: NIOClusterConnection
    /// The start of a frame whose rest has not arrived yet (a copy: the read buffer it came
    /// from is left to the frames already delivered).
    private var pending: ByteBuffer?
    /// Counts the frames that were pending, so that a timeout set for one frame does not fire
    /// for a later one.
    private var pendingGeneration: UInt64 = 0
    /// Set once a frame was refused or the channel closed: nothing more is delivered.
    private var failed = false

    init(connection: NIOClusterConnection) {
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var input = unwrapInboundIn(data)
        let continuing = pending != nil
        if var earlier = pending {
            pending = nil
            earlier.writeBuffer(&input)
            input = earlier
        }
        var delivered = 0
        do {
            // A frame's handling may close the channel (a protocol violation) or raise the
            // frame limit (the handshake completed): the limit is read for every frame.
            while !failed {
                var decoder = FrameDecoder(maximumFrameSize: connection.frameLimit)
                guard let frame = try decoder.decode(buffer: &input) else { break }
                delivered += 1
                connection.deliver(frame)
            }
        } catch {
            failed = true
            return errorCaught(context: context, error: error)
        }
        guard !failed, input.readableBytes > 0 else { return }
        if continuing && delivered == 0 {
            // Still the same frame in progress: keep adding to its buffer.
            pending = input
            return
        }
        // A new frame in progress: copy its start into a buffer of its own, with room for the
        // frame's announced size but at most twice what arrived (at least 64 KiB, at most the
        // frame): it grows, doubling, as the rest arrives, so a length prefix alone reserves
        // little. Small frames' leftovers are a few bytes; the buffer they came from stays with
        // the frames delivered from it.
        let announced =
            input.getInteger(at: input.readerIndex, endianness: .big, as: UInt32.self)
            .map { Int($0) + 4 } ?? input.readableBytes
        var kept = context.channel.allocator.buffer(
            capacity: max(input.readableBytes, min(announced, max(input.readableBytes * 2, 64 << 10))))
        kept.writeBuffer(&input)
        pending = kept
        pendingGeneration &+= 1
        startIncompleteFrameTimer(context: context)
    }

    /// Closes the connection if the frame now pending is still pending after the timeout.
    private func startIncompleteFrameTimer(context: ChannelHandlerContext) {
        guard let timeout = connection.incompleteFrameTimeout else { return }
        let generation = pendingGeneration
        context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            guard !failed, let pending, pendingGeneration == generation else { return }
            failed = true
            self.pending = nil
            let announced =
                pending.getInteger(at: pending.readerIndex, endianness: .big, as: UInt32.self)
                .map { Int($0) + 4 } ?? 0
            let duration = Duration(timeout)
            errorCaught(
                context: context,
                error: WireError.incompleteFrame(
                    received: pending.readableBytes, announced: announced, timeout: duration))
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        connection.deliveredBurst()
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        failed = true
        pending = nil
        connection.reportClosed(connection.closingError)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A frame the decoder refused, or a socket error: the connection is unusable.
        if connection.closingError == nil { connection.closingError = error }
        pending = nil
        context.close(promise: nil)
    }
}

/// Whether a transport has shut down, shared with its connections.
final class StoppedFlag: Sendable {
    let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
}
