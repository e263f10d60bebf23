import NIOCore
import NIOHTTP1
import NIOWebSocket
import Troupe

/// Answers the observer's HTTP requests: the page, the state as JSON, and the actions on one
/// actor (stop, restart, describe, test message: `ObserverHTTPHandler+Inspection.swift`).
/// Every request is refused with 401 unless it carries the token; a request body (none of the
/// routes takes one) is never buffered, and one over 4 KiB closes the connection.
///
/// Routes: `GET /` (the page), `GET /api/state?sort=&q=&limit=` (the document a page is sent),
/// `POST /api/actors/ID/stop` and `POST /api/actors/ID/restart`, `GET /api/actors/ID/describe`
/// and `POST /api/actors/ID/message?text=`; `GET /ws` is the page's WebSocket, taken by the
/// upgrader before it reaches this handler.
final class ObserverHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maximumBodyBytes = 4096

    let hub: NIOLoopBound<LiveHub>
    private let token: AccessToken
    private var head: HTTPRequestHead?
    private var bodyBytes = 0

    init(hub: NIOLoopBound<LiveHub>, token: AccessToken) {
        self.hub = hub
        self.token = token
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            bodyBytes = 0
        case .body(let part):
            bodyBytes += part.readableBytes
            if bodyBytes > Self.maximumBodyBytes, head != nil {
                head = nil
                respond(context: context, status: .payloadTooLarge, text: "request body too large\n", keepAlive: false)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            route(head, context: context)
        }
    }

    /// A request the decoder could not parse (NIO's error handler has answered 400 already), or
    /// a failed connection: nothing more is read from it. A refused WebSocket upgrade (no
    /// token, another path) is not one: its request comes on here and is answered like any
    /// other (401, 404).
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is NIOWebSocketUpgradeError { return }
        context.close(promise: nil)
    }

    private func route(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let keepAlive = head.isKeepAlive
        guard token.admits(head) else {
            respond(
                context: context, status: .unauthorized,
                text: "token required: open the URL the observer gave at start (it ends in ?token=...)\n",
                keepAlive: keepAlive)
            return
        }
        let target = RequestTarget(head.uri)
        let segments = target.path.split(separator: "/")
        let isPage = segments.isEmpty || segments == ["index.html"]
        switch (head.method, segments.count) {
        case (.GET, _) where isPage:
            respond(
                context: context, status: .ok, body: ObserverPage.html, contentType: "text/html; charset=utf-8",
                keepAlive: keepAlive)
        case (.GET, 2) where segments == ["api", "state"]:
            let hub = hub.value
            hub.counters.samplesTaken.add(1, ordering: .relaxed)
            let document = hub.sampler.document(hub.sampler.sample(), view: ActorView(query: target.query))
            respond(
                context: context, status: .ok, body: document.text, contentType: "application/json",
                keepAlive: keepAlive)
        case (.POST, 4) where segments[0] == "api" && segments[1] == "actors" && segments[3] == "message":
            sendTestMessage(to: segments[2], query: target.query, context: context, keepAlive: keepAlive)
        case (.POST, 4) where segments[0] == "api" && segments[1] == "actors":
            act(on: segments[2], action: segments[3], context: context, keepAlive: keepAlive)
        case (.GET, 4) where segments[0] == "api" && segments[1] == "actors" && segments[3] == "describe":
            describe(segments[2], context: context)
        case (.GET, 1) where segments.first == "ws":
            respond(
                context: context, status: .badRequest, text: "a WebSocket upgrade is required here\n",
                keepAlive: keepAlive)
        case (.GET, _), (.POST, _):
            respond(context: context, status: .notFound, text: "not found\n", keepAlive: keepAlive)
        default:
            respond(context: context, status: .methodNotAllowed, text: "only GET and POST\n", keepAlive: keepAlive)
        }
    }

    /// `POST /api/actors/ID/stop` or `…/restart`.
    private func act(on idText: Substring, action: Substring, context: ChannelHandlerContext, keepAlive: Bool) {
        guard action == "stop" || action == "restart" else {
            respond(context: context, status: .notFound, text: "not found\n", keepAlive: keepAlive)
            return
        }
        guard let id = actorID(idText, context: context, keepAlive: keepAlive) else { return }
        let system = hub.value.sampler.system
        if action == "stop" ? system.stopActor(id: id) : system.restartActor(id: id) {
            respond(
                context: context, status: .ok, json: "{\"\(action == "stop" ? "stopped" : "restarting")\":true}",
                keepAlive: keepAlive)
        } else {
            let reason =
                action == "stop"
                ? "no live actor has id \(id)"
                : "no live actor with id \(id) can restart (it stopped, or was spawned from an instance rather than a factory)"
            respond(context: context, status: .notFound, json: "{\"error\":\"\(reason)\"}", keepAlive: keepAlive)
        }
    }

    /// The actor id in a route, or nil after answering 400.
    func actorID(_ text: Substring, context: ChannelHandlerContext, keepAlive: Bool) -> UInt64? {
        if let id = UInt64(text) { return id }
        respond(
            context: context, status: .badRequest, json: #"{"error":"the actor id is not a number"}"#,
            keepAlive: keepAlive)
        return nil
    }

    func respond(context: ChannelHandlerContext, status: HTTPResponseStatus, text: String, keepAlive: Bool) {
        respond(
            context: context, status: status, body: text, contentType: "text/plain; charset=utf-8", keepAlive: keepAlive
        )
    }

    func respond(context: ChannelHandlerContext, status: HTTPResponseStatus, json: String, keepAlive: Bool) {
        respond(context: context, status: status, body: json, contentType: "application/json", keepAlive: keepAlive)
    }

    func respond(
        context: ChannelHandlerContext, status: HTTPResponseStatus, body: String, contentType: String, keepAlive: Bool
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: contentType)
        headers.add(name: "content-length", value: String(body.utf8.count))
        headers.add(name: "cache-control", value: "no-store")
        headers.add(name: "x-content-type-options", value: "nosniff")
        headers.add(name: "referrer-policy", value: "no-referrer")
        headers.add(name: "x-frame-options", value: "DENY")
        headers.add(
            name: "content-security-policy",
            value:
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
        )
        if !keepAlive { headers.add(name: "connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
        buffer.writeString(body)
        context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}
