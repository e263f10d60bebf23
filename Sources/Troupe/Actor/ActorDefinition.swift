/// The definition of an actor: its state, the type of message it accepts and how it reacts.
///
/// An instance lives inside the runtime and is only ever touched by one worker thread at a
/// time, so its state needs no locks. Messages arrive one at a time, in order per sender.
///
/// ```swift
/// struct Counter: ActorDefinition {
///     enum Message: Sendable { case add(Int), get(Reply<Int>) }
///     var total = 0
///     mutating func receive(_ message: Message, context: ActorContext<Message>) {
///         switch message {
///         case .add(let n): total += n
///         case .get(let reply): reply.succeed(total)
///         }
///     }
/// }
/// let counter = system.spawn(Counter())
/// counter.tell(.add(2))
/// let total = try await counter.ask { .get($0) }
/// ```
public protocol ActorDefinition: SpawnableActor where Definition == Self {
    /// What the actor accepts. Values cross threads, hence `Sendable`.
    associatedtype Message: Sendable

    /// Handles one message. Called on a worker thread, never concurrently with any other call
    /// on this instance. Throwing is a failure of the actor (see ``FailureDirective``).
    mutating func receive(_ message: Message, context: ActorContext<Message>) throws

    /// Runs on the actor before its first message (and, through the default
    /// ``didRestart(reason:context:)``, on a fresh instance after a restart).
    mutating func started(context: ActorContext<Message>)

    /// Runs on the actor after its last message, when it stops for any reason
    /// (``ActorContext/terminationReason`` says which). Not called on restarts.
    mutating func stopped(context: ActorContext<Message>)

    /// Runs on the failing instance just before it is replaced by a restart: release what the
    /// fresh instance will acquire again. Its timers are cancelled afterwards; its children,
    /// watches and mailbox are kept. Default: nothing.
    mutating func willRestart(reason: any Error, context: ActorContext<Message>)

    /// Runs on the fresh instance after a restart, before the next pending message.
    /// Default: calls ``started(context:)``.
    mutating func didRestart(reason: any Error, context: ActorContext<Message>)

    /// Runtime entry point; do not implement or call it. Runs one turn of this definition's
    /// actor. The default implementation is the turn itself, `@inlinable`, so that the
    /// compiler builds it for your type in your module: popping, moving the message out of
    /// its envelope and calling ``receive(_:context:)`` are then specialised code, without
    /// the generic runtime's metadata lookups and witness calls.
    static func _turn(_ turn: _ActorTurn) -> Bool
}

extension ActorDefinition {
    /// An ``ActorDefinition`` runs as itself.
    public static func _runnable(_ actor: consuming Self) -> Self { actor }
    public static func _runnableFactory(_ factory: @escaping @Sendable () -> Self) -> @Sendable () -> Self { factory }

    @inlinable
    public static func _turn(_ turn: _ActorTurn) -> Bool {
        // Safety: only the runtime makes an `_ActorTurn`, in `ActorCell<Self>.runTurn`, so `turn.cell` is
        // that cell; its runner holds it for the whole turn.
        Unmanaged<ActorCell<Self>>.fromOpaque(turn.cell)._withUnsafeGuaranteedRef {
            $0.turn(buffer: turn.buffer, limit: turn.limit, progress: turn.progress)
        }
    }

    public mutating func started(context: ActorContext<Message>) {}
    public mutating func stopped(context: ActorContext<Message>) {}
    public mutating func willRestart(reason: any Error, context: ActorContext<Message>) {}
    public mutating func didRestart(reason: any Error, context: ActorContext<Message>) { started(context: context) }
}
