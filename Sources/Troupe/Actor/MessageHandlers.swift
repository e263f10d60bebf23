/// The handler table of a ``HandlerActor``.
public struct MessageHandlers<Actor> {
    typealias Handler = (inout Actor, any Sendable, ErasedReply?, ActorContext<AnyMessage>) throws -> Void
    var table: [ObjectIdentifier: Handler] = [:]
    /// Message types registered more than once (a misuse reported at spawn).
    var duplicates: [String] = []

    init() {}

    private mutating func add<Payload>(_ type: Payload.Type, _ handler: @escaping Handler) {
        let key = ObjectIdentifier(type)
        if table[key] != nil { duplicates.append("\(Payload.self)") }
        table[key] = handler
    }

    /// The handler table of `actor`, set up now (on the spawner's thread, so that a misuse is
    /// reported where the actor is spawned). Throws ``HandlerSetupError`` when `setup`
    /// registered a message type twice.
    static func built(for actor: inout Actor) throws(HandlerSetupError) -> MessageHandlers where Actor: HandlerActor {
        var handlers = MessageHandlers()
        actor.setup(&handlers)
        if !handlers.duplicates.isEmpty {
            throw .duplicateHandlers(actor: "\(Actor.self)", messageTypes: handlers.duplicates)
        }
        return handlers
    }

    /// Void reaction: do the work. An asker (expecting `Void`) is answered when it is done.
    public mutating func void<Payload: Sendable>(
        _ type: Payload.Type,
        _ body: @escaping (inout Actor, Payload, ActorContext<AnyMessage>) throws -> Void
    ) {
        add(type) { actor, payload, reply, context in
            try body(&actor, payload as! Payload, context)
            reply?.succeed(())
        }
    }

    /// Result reaction answering with a value or an error: `.failure(error)` fails the ask
    /// (the asker sees ``AskError/failed(_:)``) without failing the actor, which goes on with
    /// its state, unlike a thrown error.
    public mutating func result<Payload: Sendable, Value: Sendable>(
        _ type: Payload.Type,
        _ body: @escaping (inout Actor, Payload, ActorContext<AnyMessage>) -> Result<Value, any Error>
    ) {
        add(type) { actor, payload, reply, context in
            switch body(&actor, payload as! Payload, context) {
            case .success(let value): reply?.succeed(value)
            case .failure(let error): reply?.fail(AskError.wrapping(error))
            }
        }
    }

    /// Result reaction: answer at once with the returned value.
    public mutating func result<Payload: Sendable, Value: Sendable>(
        _ type: Payload.Type,
        _ body: @escaping (inout Actor, Payload, ActorContext<AnyMessage>) throws -> Value
    ) {
        add(type) { actor, payload, reply, context in
            let value = try body(&actor, payload as! Payload, context)
            reply?.succeed(value)
        }
    }

    /// Future reaction: the handler gets the ``Reply`` and completes it later, for example when
    /// another actor answered. Dropping the reply unanswered fails the asker with `.noReply`.
    public mutating func future<Payload: Sendable, Value: Sendable>(
        _ type: Payload.Type,
        replying valueType: Value.Type,
        _ body: @escaping (inout Actor, Payload, ActorContext<AnyMessage>, Reply<Value>) throws -> Void
    ) {
        add(type) { actor, payload, reply, context in
            let state = AskState<Value>(limit: AskLimit(duration: .zero, nanoseconds: 0)) { result in
                switch result {
                case .success(let value): reply?.succeed(value)
                case .failure(let error): reply?.fail(error)
                }
            }
            let later = Reply(state)
            do {
                try body(&actor, payload as! Payload, context, later)
            } catch {
                // Fail with the error before `later` is released (which would say .noReply).
                later.fail(error)
                throw error
            }
        }
    }
}
