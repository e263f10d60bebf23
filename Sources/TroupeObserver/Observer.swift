import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Troupe

/// A live page into a running `ActorSystem`, served over HTTP and WebSocket: workers
/// and what they run, messages per second, dead letters by reason, the latency histograms,
/// stuck handlers, and the actors (top N by a sort key, searchable), with a stop button per
/// actor.
///
/// ```swift
/// let observer = try await system.serveObserver()
/// print("observer: \(observer.url)")        // http://127.0.0.1:PORT/?token=…
/// …
/// await observer.shutdown()                  // before the system's shutdown
/// ```
///
/// It listens on loopback unless told otherwise, refuses every request that lacks its token,
/// holds each connection to small limits (request heads of 16 KiB, bodies of 4 KiB, WebSocket
/// frames of 4 KiB, ``ObserverSettings/maxConnections``, an idle timeout), and reads the
/// system only while a page is connected or a request asks. See the Observer article.
public final class Observer: Sendable {
    /// The page's address with the token: open it in a browser.
    public let url: String
    /// The port it listens on.
    public let port: Int
    /// The token every request must carry.
    public let token: String

    private let group: MultiThreadedEventLoopGroup
    private let listener: Channel
    private let hub: NIOLoopBound<LiveHub>
    private let gate: ConnectionGate
    private let counters: ObserverCounters

    private init(
        url: String, port: Int, token: String, group: MultiThreadedEventLoopGroup, listener: Channel,
        hub: NIOLoopBound<LiveHub>, gate: ConnectionGate, counters: ObserverCounters
    ) {
        self.url = url
        self.port = port
        self.token = token
        self.group = group
        self.listener = listener
        self.hub = hub
        self.gate = gate
        self.counters = counters
    }

    /// Starts serving `system`'s page with `settings`; `ActorSystem.serveObserver(_:)` says
    /// the same in one call.
    public static func start(
        system: ActorSystem, settings: ObserverSettings = ObserverSettings()
    ) async throws(ObserverError) -> Observer {
        let settings = try settings.validated()
        let token = settings.token.map(AccessToken.init(value:)) ?? .random()
        // One thread: the pages, the requests and the sampling all run on it, so the sampler
        // and the hub need no locks, and a page can never take more than this one thread.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let counters = ObserverCounters()
        let interval = settings.updateInterval
        // Made on the loop that alone will use it.
        let hub: NIOLoopBound<LiveHub>
        do {
            hub = try await loop.submit {
                NIOLoopBound(
                    LiveHub(
                        sampler: SystemSampler(system: system), eventLoop: loop, interval: interval, counters: counters),
                    eventLoop: loop)
            }.get()
        } catch {
            try? await group.shutdownGracefully()
            throw .threadFailed(reason: "\(error)")
        }
        let gate = ConnectionGate(limit: settings.maxConnections)
        let security = settings.security
        let idle = TimeAmount.nanoseconds(
            settings.idleTimeout.components.seconds * 1_000_000_000 + settings.idleTimeout.components.attoseconds
                / 1_000_000_000)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 * 1024, high: 256 * 1024))
            .childChannelInitializer { channel in
                guard gate.enter() else { return channel.close() }
                channel.closeFuture.whenComplete { _ in gate.leave() }
                return channel.eventLoop.makeCompletedFuture {
                    try security?.secure(channel)
                    try Self.configure(channel, hub: hub, token: token, idle: idle)
                }
            }
        let listener: Channel
        do {
            listener = try await bootstrap.bind(host: settings.host, port: settings.port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw .bindFailed(host: settings.host, port: settings.port, reason: "\(error)")
        }
        let port = listener.localAddress?.port ?? settings.port
        let host = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        let url = "\(settings.security == nil ? "http" : "https")://\(host):\(port)/?token=\(token.value)"
        Logger(label: "troupe.observer").notice(
            "observer serving", metadata: ["url": "\(url)", "system": "\(system.configuration.name)"])
        return Observer(
            url: url, port: port, token: token.value, group: group, listener: listener, hub: hub, gate: gate,
            counters: counters)
    }

    /// The child channel's handlers: an idle timeout, HTTP/1 with small limits, the WebSocket
    /// upgrade for `/ws`, then the routes.
    private static func configure(
        _ channel: Channel, hub: NIOLoopBound<LiveHub>, token: AccessToken, idle: TimeAmount
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(IdleStateHandler(allTimeout: idle), name: "observer-idle")
        try pipeline.addHandler(IdleConnectionCloser(), name: "observer-idle-closer")
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 4096, automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                let target = RequestTarget(head.uri)
                guard target.path == "/ws", token.admits(head) else {
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                return channel.eventLoop.makeSucceededFuture(HTTPHeaders())
            },
            upgradePipelineHandler: { channel, head in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    // A page may stay silent for as long as it is open: updates flow the other way.
                    _ = pipeline.removeHandler(name: "observer-idle")
                    _ = pipeline.removeHandler(name: "observer-idle-closer")
                    // The routes stay behind the HTTP handlers the upgrade removed: frames must
                    // not reach them.
                    _ = pipeline.removeHandler(name: "observer-http")
                    try pipeline.addHandler(
                        PageSocketHandler(hub: hub, initialView: ActorView(query: RequestTarget(head.uri).query)))
                }
            })
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = 8 * 1024
        limits.maxHeaderListSize = 16 * 1024
        limits.maxHeaderFieldCount = 64
        try pipeline.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }),
            withEncoderConfiguration: HTTPResponseEncoder.Configuration(),
            withDecoderLimitConfiguration: limits)
        try pipeline.addHandler(ObserverHTTPHandler(hub: hub, token: token), name: "observer-http")
    }

    /// Pages connected now (over WebSocket).
    public var connectedPages: Int { counters.connectedPages.load(ordering: .relaxed) }

    /// Connections open now (pages and requests).
    public var openConnections: Int { gate.openConnections }

    /// Readings of the system taken so far: none while no page is connected and no request
    /// asks.
    public var samplesTaken: Int { counters.samplesTaken.load(ordering: .relaxed) }

    /// Documents pushed to pages so far (each only when it differed from the page's last one).
    public var documentsSent: Int { counters.documentsSent.load(ordering: .relaxed) }

    /// Stops listening, closes every page and connection, and ends the observer's thread.
    /// Idempotent.
    public func shutdown() async {
        let hub = hub
        try? await listener.eventLoop.submit { hub.value.closeAll() }.get()
        try? await listener.close()
        try? await group.shutdownGracefully()
    }
}

extension ActorSystem {
    /// Serves a live page into this system (an ``Observer``) with `settings`: on loopback, on a
    /// free port, with a random token, unless the settings say otherwise.
    public func serveObserver(
        _ settings: ObserverSettings = ObserverSettings()
    ) async throws(ObserverError)
        -> Observer
    {
        try await Observer.start(system: self, settings: settings)
    }
}

/// Closes a connection that the idle-state handler reports silent.
final class IdleConnectionCloser: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            context.close(promise: nil)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }
}
