/// An actor defined by one handler per message type, each with one of three reactions: void
/// (do work), result (answer at once) or future (answer later).
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
public protocol HandlerActor: SpawnableActor {
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
    /// Sets the handlers up (on the calling thread, so that a misuse is reported where the
    /// actor is spawned or registered).
    public static func _runnable(_ actor: consuming Self) throws(HandlerSetupError) -> _HandlerHost<Self> {
        try _HandlerHost(validating: actor)
    }

    /// A factory whose instances are set up as they are made (a restart's fresh instance).
    public static func _runnableFactory(_ factory: @escaping @Sendable () -> Self) -> @Sendable () -> _HandlerHost<Self>
    {
        {
            do {
                return try _HandlerHost(validating: factory())
            } catch {
                fatalError("\(error)")
            }
        }
    }

    public mutating func started(context: ActorContext<AnyMessage>) {}
    public mutating func stopped(context: ActorContext<AnyMessage>) {}
    public mutating func willRestart(reason: any Error, context: ActorContext<AnyMessage>) {}
    public mutating func didRestart(reason: any Error, context: ActorContext<AnyMessage>) { started(context: context) }
}

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
