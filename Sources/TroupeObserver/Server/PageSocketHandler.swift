import NIOCore
import NIOWebSocket

/// One page's WebSocket: registers the page with the hub, takes its view changes (text frames
/// holding a query string such as `sort=depth&q=cart&limit=50`), answers pings and closes.
/// Frames are at most 4 KiB (the upgrader's limit); anything else a page sends is ignored.
final class PageSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let hub: NIOLoopBound<LiveHub>
    private let initialView: ActorView
    private var closing = false

    init(hub: NIOLoopBound<LiveHub>, initialView: ActorView) {
        self.hub = hub
        self.initialView = initialView
    }

    func handlerAdded(context: ChannelHandlerContext) {
        hub.value.add(context.channel, view: initialView)
    }

    func channelInactive(context: ChannelHandlerContext) {
        hub.value.remove(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text where frame.fin:
            var data = frame.unmaskedData
            let text = data.readString(length: data.readableBytes) ?? ""
            hub.value.change(context.channel, to: ActorView(query: Substring(text)))
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            guard !closing else {
                context.close(promise: nil)
                return
            }
            closing = true
            let reply = WebSocketFrame(
                fin: true, opcode: .connectionClose, data: context.channel.allocator.buffer(capacity: 0))
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }
}
