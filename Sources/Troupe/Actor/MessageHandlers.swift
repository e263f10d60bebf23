/// A ``HandlerActor`` whose `setup` cannot be used.
public enum HandlerSetupError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `setup` registered more than one handler for these message types.
    case duplicateHandlers(actor: String, messageTypes: [String])

    public var description: String {
        switch self {
        case .duplicateHandlers(let actor, let types):
            "\(actor).setup registers more than one handler for \(types.joined(separator: ", ")); register exactly one handler per message type (an enum payload covers several cases)"
        }
    }
}

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

/// An actor defined, as in Oscar and Swactors, by one handler per message type, each with one
/// of three reactions: void (do work), result (answer at once) or future (answer later).
///
/// ```swift
/// struct Session: HandlerActor {
///     var user: String?
///     func setup(_ on: inout MessageHandlers<Session>) {
///         on.void(Logout.self) { session, _, _ in session.user = nil }
///         on.result(CurrentUser.self) { session, _, _ in session.user ?? "nobody" }
///         on.future(Login.self, replying: String.self) { session, login, context, reply in
///             context.ask(auth, { .check(login, $0) }) { result in ... reply.succeed(...) }
///         }
///     }
/// }
/// let session = system.spawn(Session())
/// session.tell(Logout())
/// let user: String = try await session.ask(CurrentUser())
/// ```
/// A message whose type has no handler becomes a dead letter
/// (``DeadLetterReason/unhandledMessageType(_:)``); an asker learns it at once. Dispatch costs
/// one dictionary lookup per message: prefer ``ActorDefinition`` with an enum on hot paths.
public protocol HandlerActor: SendableMetatype {
    /// Registers the handlers; called once per instance when it is spawned (on the spawner's
    /// thread, before `started`), and for each fresh instance a restart makes. Registering a
    /// message type twice is a misuse reported there.
    mutating func setup(_ on: inout MessageHandlers<Self>)
    mutating func started(context: ActorContext<AnyMessage>)
    mutating func stopped(context: ActorContext<AnyMessage>)
    /// See ``ActorDefinition/willRestart(reason:context:)``.
    mutating func willRestart(reason: any Error, context: ActorContext<AnyMessage>)
    /// See ``ActorDefinition/didRestart(reason:context:)``; the handlers are set up again first.
    mutating func didRestart(reason: any Error, context: ActorContext<AnyMessage>)
}

extension HandlerActor {
    public mutating func started(context: ActorContext<AnyMessage>) {}
    public mutating func stopped(context: ActorContext<AnyMessage>) {}
    public mutating func willRestart(reason: any Error, context: ActorContext<AnyMessage>) {}
    public mutating func didRestart(reason: any Error, context: ActorContext<AnyMessage>) { started(context: context) }
}

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
            let state = AskState<Value>(timeout: .zero, timer: nil) { result in
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

/// Runs a ``HandlerActor`` as an ``ActorDefinition``.
struct HandlerHost<Actor: HandlerActor>: ActorDefinition {
    var actor: Actor
    var handlers: MessageHandlers<Actor>

    /// Sets the handlers up at once: at spawn for the first instance, in the factory call for
    /// a restarted one. A misused `setup` stops the program here, with a message that says
    /// what to do (APIs that can throw use ``validated(_:)`` instead).
    init(_ actor: consuming Actor) {
        do {
            self = try Self.validated(actor)
        } catch {
            fatalError("\(error)")
        }
    }

    /// Sets the handlers up, throwing ``HandlerSetupError`` on a misused `setup`.
    static func validated(_ actor: consuming Actor) throws(HandlerSetupError) -> HandlerHost {
        var actor = actor
        let handlers = try MessageHandlers.built(for: &actor)
        return HandlerHost(actor: actor, handlers: handlers)
    }

    private init(actor: consuming Actor, handlers: MessageHandlers<Actor>) {
        self.actor = actor
        self.handlers = handlers
    }

    mutating func started(context: ActorContext<AnyMessage>) {
        actor.started(context: context)
    }

    mutating func stopped(context: ActorContext<AnyMessage>) { actor.stopped(context: context) }

    mutating func willRestart(reason: any Error, context: ActorContext<AnyMessage>) {
        actor.willRestart(reason: reason, context: context)
    }

    mutating func didRestart(reason: any Error, context: ActorContext<AnyMessage>) {
        actor.didRestart(reason: reason, context: context)
    }

    mutating func receive(_ message: AnyMessage, context: ActorContext<AnyMessage>) throws {
        let payloadType = type(of: message.payload)
        guard let handler = handlers.table[ObjectIdentifier(payloadType)] else {
            let reason = DeadLetterReason.unhandledMessageType("\(payloadType)")
            context.system.deadLetters.record(reason, recipient: context.address, message: message.payload)
            message.reply?.fail(.undeliverable(reason))
            return
        }
        // A failure reaches the asker through the cell (which may retry the message first).
        try handler(&actor, message.payload, message.reply, context)
    }
}

extension ActorSystem {
    /// Spawns an actor with per-type handlers.
    @discardableResult
    public func spawn<Actor: HandlerActor>(_ actor: sending Actor, options: SpawnOptions = .default) -> ActorRef<AnyMessage> {
        spawn(HandlerHost(actor), options: options)
    }

    /// Spawns a restartable actor with per-type handlers.
    @discardableResult
    public func spawn<Actor: HandlerActor>(options: SpawnOptions = .default, factory: @escaping @Sendable () -> Actor) -> ActorRef<AnyMessage> {
        spawn(options: options) { HandlerHost(factory()) }
    }
}

extension ActorContext {
    /// Spawns a child with per-type handlers.
    @discardableResult
    public func spawn<Actor: HandlerActor>(_ actor: sending Actor, options: SpawnOptions = .default) -> ActorRef<AnyMessage> {
        spawn(HandlerHost(actor), options: options)
    }
}

/// The per-type forms of tell and ask, shared by refs and pools of ``HandlerActor``s: any
/// `Sendable` value is the message, and the handler registered for its type answers.
extension MessageTarget where Message == AnyMessage {
    /// Sends any value; the handler for its type handles it (in a pool: the chosen member's).
    @discardableResult
    public func tell<Payload: Sendable>(_ payload: Payload) -> TellOutcome {
        tell(AnyMessage(payload: payload, reply: nil))
    }

    /// Sends any value and waits for the handler's answer, of type `Value`.
    nonisolated(nonsending)
    public func ask<Payload: Sendable, Value: Sendable>(
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil
    ) async throws(AskError) -> Value {
        try await ask(timeout: timeout) { (reply: Reply<Value>) in AnyMessage.request(payload, reply) }
    }

    /// Sends any value and calls `onReply` exactly once with the handler's answer (of type
    /// `Value`) or the ask's error, on the thread that completes the ask. No task is created.
    public func ask<Payload: Sendable, Value: Sendable>(
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil,
        onReply: @escaping @Sendable (Result<Value, AskError>) -> Void
    ) {
        ask(timeout: timeout, { (reply: Reply<Value>) in AnyMessage.request(payload, reply) }, onReply: onReply)
    }

    /// Sends any value and blocks the calling thread until the handler answers: ActorKit's
    /// `sync` for per-type handler actors. Refused where it could deadlock, with
    /// ``AskError/blockingOnWorkerThread`` (see ``ActorRef/askBlocking(timeout:_:)``).
    public func askBlocking<Payload: Sendable, Value: Sendable>(
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil
    ) throws(AskError) -> Value {
        try askBlocking(timeout: timeout) { (reply: Reply<Value>) in AnyMessage.request(payload, reply) }
    }
}

extension AnyMessage {
    /// A request: `payload` with the reply slot its handler answers through.
    static func request<Value: Sendable>(_ payload: any Sendable, _ reply: Reply<Value>) -> AnyMessage {
        AnyMessage(payload: payload, reply: TypedErasedReply(reply))
    }
}

extension ActorContext {
    /// Asks an actor with per-type handlers without blocking this one: the handler's answer
    /// (of type `Value`) or the ask's error comes back as `message(result)`. No task is created.
    public func ask<Payload: Sendable, Value: Sendable>(
        _ target: ActorRef<AnyMessage>,
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil,
        then message: @escaping @Sendable (Result<Value, AskError>) -> Message
    ) {
        let me = ref
        target.ask(payload, returning: Value.self, timeout: timeout) { result in me.tell(message(result)) }
    }
}
