import NIOCore
import NIOHTTP1
import Troupe

/// The actions on an ``InspectableActor``: its description, and a test message made from a text.
extension ObserverHTTPHandler {
    /// `GET /api/actors/ID/describe`: the actor's own description, asked on the actor (so the
    /// answer waits for the messages before it, at most 2 s). Answered with `Connection: close`:
    /// a request pipelined behind it must not be answered first.
    func describe(_ idText: Substring, context: ChannelHandlerContext) {
        guard let id = actorID(idText, context: context, keepAlive: false) else { return }
        let system = hub.value.sampler.system
        let loop = context.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        let bound = NIOLoopBound(context, eventLoop: loop)
        let answered = loop.makePromise(of: Result<String, ActorInspectionError>.self)
        answered.completeWithTask { await ObserverHTTPHandler.description(of: id, in: system) }
        answered.futureResult.whenSuccess { result in
            let context = bound.value
            // The client may have gone meanwhile (its handlers are then removed).
            guard context.channel.isActive else { return }
            var json = JSONText()
            json.object { json in
                json.member("id", id)
                switch result {
                case .success(let text): json.member("description", text)
                case .failure(let error): json.member("error", error.description)
                }
            }
            handler.value.respond(
                context: context, status: ObserverHTTPHandler.status(of: result), json: json.text, keepAlive: false)
        }
    }

    private static func description(of id: UInt64, in system: ActorSystem) async -> Result<String, ActorInspectionError>
    {
        do throws(ActorInspectionError) {
            return .success(try await system.describeActor(id: id))
        } catch {
            return .failure(error)
        }
    }

    /// `POST /api/actors/ID/message?text=`: the test message the actor's definition makes of the
    /// text (in the query, so no body is read), told to it.
    func sendTestMessage(to idText: Substring, query: Substring, context: ChannelHandlerContext, keepAlive: Bool) {
        guard let id = actorID(idText, context: context, keepAlive: keepAlive) else { return }
        guard let text = QueryString.pairs(query).first(where: { $0.0 == "text" })?.1 else {
            respond(
                context: context, status: .badRequest, json: #"{"error":"give the message as ?text=..."}"#,
                keepAlive: keepAlive)
            return
        }
        var json = JSONText()
        let status: HTTPResponseStatus
        do throws(ActorInspectionError) {
            let outcome = try hub.value.sampler.system.sendTestMessage(toActor: id, text: text)
            status = .ok
            json.object { json in
                json.member("id", id)
                json.member("outcome", "\(outcome)")
            }
        } catch {
            status = Self.status(of: Result<String, ActorInspectionError>.failure(error))
            json.object { json in json.member("error", error.description) }
        }
        respond(context: context, status: status, json: json.text, keepAlive: keepAlive)
    }

    private static func status(of result: Result<String, ActorInspectionError>) -> HTTPResponseStatus {
        switch result {
        case .success: .ok
        case .failure(.noSuchActor), .failure(.stopped): .notFound
        case .failure(.notInspectable), .failure(.testMessageRefused): .unprocessableEntity
        case .failure(.timedOut): .serviceUnavailable
        }
    }
}
