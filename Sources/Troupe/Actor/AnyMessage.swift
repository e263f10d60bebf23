/// The message of actors with per-type handlers: any `Sendable` value, plus the reply slot
/// when it was sent with `ask`.
public struct AnyMessage: Sendable {
    public let payload: any Sendable
    let reply: ErasedReply?

    public init(_ payload: any Sendable) {
        self.payload = payload
        self.reply = nil
    }

    init(payload: any Sendable, reply: ErasedReply?) {
        self.payload = payload
        self.reply = reply
    }
}

/// A ``Reply`` whose value type is checked at run time.
class ErasedReply: @unchecked Sendable {  // immutable; subclasses hold a thread-safe Reply
    func succeed(_ value: any Sendable) {}
    func fail(_ error: AskError) {}
}

final class TypedErasedReply<Value: Sendable>: ErasedReply, @unchecked Sendable {  // immutable
    let reply: Reply<Value>
    init(_ reply: Reply<Value>) { self.reply = reply }

    override func succeed(_ value: any Sendable) {
        if let typed = value as? Value {
            reply.succeed(typed)
        } else {
            reply.state.complete(.failure(.typeMismatch(expected: "\(Value.self)", actual: "\(type(of: value))")))
        }
    }

    override func fail(_ error: AskError) { reply.state.complete(.failure(error)) }
}

extension AnyMessage {
    /// A request: `payload` with the reply slot its handler answers through.
    static func request<Value: Sendable>(_ payload: any Sendable, _ reply: Reply<Value>) -> AnyMessage {
        AnyMessage(payload: payload, reply: TypedErasedReply(reply))
    }
}
