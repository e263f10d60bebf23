/// What the runtime can spawn: an ``ActorDefinition`` (one `receive` over a message type) or a
/// ``HandlerActor`` (one handler per message type).
///
/// Every API that spawns, registers, pools or supervises actors takes a `SpawnableActor`, so
/// both kinds of actor go through one path. Conform through ``ActorDefinition`` or
/// ``HandlerActor``; the underscored requirements are the runtime's and have defaults there.
/// An actor runs on Troupe's worker threads, so its type cannot be isolated to a global actor
/// such as the main actor (hence `SendableMetatype`).
public protocol SpawnableActor: SendableMetatype {
    /// The definition the runtime runs: the type itself for an ``ActorDefinition``, a host
    /// holding the handler table for a ``HandlerActor``. Refs to the actor accept its
    /// `Definition.Message` (``AnyMessage`` for a ``HandlerActor``).
    associatedtype Definition: ActorDefinition

    /// The runnable form of `actor`. Throws ``HandlerSetupError`` when a ``HandlerActor``'s
    /// `setup` is misused. Called on the spawner's thread (and on a worker for a restart).
    static func _runnable(_ actor: consuming Self) throws(HandlerSetupError) -> Definition

    /// `factory` made to produce the runnable form (the factory itself for an
    /// ``ActorDefinition``, so that its spawns wrap nothing).
    static func _runnableFactory(_ factory: @escaping @Sendable () -> Self) -> @Sendable () -> Definition
}

extension SpawnableActor {
    /// The runnable form of `actor`, for APIs that cannot throw: a misused `setup` stops the
    /// program here, with a message that says what to do (throwing APIs call `_runnable`).
    @inlinable
    static func runnable(_ actor: consuming Self) -> Definition {
        do {
            return try _runnable(actor)
        } catch {
            fatalError("\(error)")
        }
    }
}
