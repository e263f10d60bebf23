// The baseline of the remote-call rows: a raw SwiftNIO round trip over loopback, in the same
// process and run, with nothing above the socket but a handler that echoes bytes.

import CBenchSupport
import Histogram
import NIOCore
import NIOPosix

/// Echoes every byte back.
private final class EchoHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.writeAndFlush(data, promise: nil)
    }
}

/// Sends `size` bytes, waits until as many came back, and either loops on the event loop
/// (`eventLoopRounds`) or completes the promise a task awaits (one round per call).
/// Event loop only, but for `init`.
// @unchecked: its state is confined to the channel's event loop.
private final class ClientHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let payload: ByteBuffer
    var received = 0
    var pending: EventLoopPromise<Void>?
    // The event-loop form.
    var remainingRounds = 0
    var sentAt: UInt64 = 0
    var histogram = makeLatencyHistogram()
    var finished: EventLoopPromise<Histogram<UInt64>>?

    init(size: Int) { payload = ByteBuffer(repeating: 0x61, count: size) }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received += unwrapInboundIn(data).readableBytes
        guard received >= payload.readableBytes else { return }
        received = 0
        if let pending {
            self.pending = nil
            return pending.succeed()
        }
        histogram.record(CBenchSupport_now_ns() &- sentAt)
        remainingRounds -= 1
        if remainingRounds == 0 {
            finished?.succeed(histogram)
        } else {
            sentAt = CBenchSupport_now_ns()
            context.writeAndFlush(NIOAny(payload), promise: nil)
        }
    }
}

/// What puts each end of a ``RawNIOEcho`` behind a protocol layer (the TLS rows add their TLS
/// handlers; this file stays free of NIOSSL, which only the TLS trait compiles).
struct RawEchoSecurity: Sendable {
    /// Called on the accepted channel's event loop, before the echo handler is added.
    let server: @Sendable (any Channel) throws -> Void
    /// Called on the client channel's event loop, before the client handler is added.
    let client: @Sendable (any Channel) throws -> Void
}

/// A loopback echo server and one client, on two event loops.
struct RawNIOEcho {
    let group: MultiThreadedEventLoopGroup
    let server: any Channel
    let client: any Channel
    private let handler: ClientHandler

    /// `tls`: both ends behind these handlers (the TLS rows); nil, plain TCP.
    init(size: Int, tls: RawEchoSecurity? = nil) async throws {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        server = try await ServerBootstrap(group: group.next())
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try tls?.server(channel)
                    try channel.pipeline.syncOperations.addHandler(EchoHandler())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let handler = ClientHandler(size: size)
        self.handler = handler
        client = try await ClientBootstrap(group: group.next())
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try tls?.client(channel)
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: "127.0.0.1", port: server.localAddress!.port!).get()
    }

    /// The client's event loop on `sides.caller`, the server's on `sides.callee`.
    func placeEventLoops(_ sides: (caller: Int, callee: Int)?) async throws {
        let clientThread = try await client.eventLoop.submit { CBenchSupport_thread_id() }.get()
        let serverThread = try await server.eventLoop.submit { CBenchSupport_thread_id() }.get()
        try ThreadPlacement.place([clientThread], on: sides?.caller)
        try ThreadPlacement.place([serverThread], on: sides?.callee)
    }

    /// `rounds` round trips driven by the client handler on its event loop (callback form).
    func eventLoopRounds(_ rounds: Int) async throws -> Histogram<UInt64> {
        let handler = self.handler
        let client = self.client
        return try await client.eventLoop.flatSubmit {
            let finished = client.eventLoop.makePromise(of: Histogram<UInt64>.self)
            handler.finished = finished
            handler.histogram = makeLatencyHistogram()
            handler.remainingRounds = rounds
            handler.sentAt = CBenchSupport_now_ns()
            client.writeAndFlush(handler.payload, promise: nil)
            return finished.futureResult
        }.get()
    }

    /// One round trip awaited from the calling task.
    func awaitedRound() async throws {
        let handler = self.handler
        let client = self.client
        try await client.eventLoop.flatSubmit {
            let promise = client.eventLoop.makePromise(of: Void.self)
            handler.pending = promise
            client.writeAndFlush(handler.payload, promise: nil)
            return promise.futureResult
        }.get()
    }

    func close() async {
        try? await client.close()
        try? await server.close()
        try? await group.shutdownGracefully()
    }
}
