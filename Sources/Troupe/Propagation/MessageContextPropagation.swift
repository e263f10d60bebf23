/// Carries a context with each message, from its send to its handler: how a trace (a
/// swift-distributed-tracing `ServiceContext`, with the `TroupeTracing` product) follows a
/// request from actor to actor.
///
/// Set one per system in ``ActorSystem/Configuration/contextPropagation``. With none (the
/// default) nothing is captured and sends take their fastest path; with one, every message sent
/// to the system's actors takes the slower send path, which asks ``captureContext()`` and, when
/// it returns a context, allocates one small object to carry it.
///
/// What carries a context: `tell` and `ask` from any thread or task, `context.run`'s result
/// message (its task inherits the handler's task-local values), and the reply message of a
/// non-blocking `context.ask` (the context captured when the ask was made). System messages,
/// timers and death-watch notices carry none.
public protocol MessageContextPropagation: Sendable {
    /// On the sending thread, for each message sent to an actor of the system: the context to
    /// carry, or `nil` to carry nothing (then nothing is allocated).
    func captureContext() -> (any Sendable)?

    /// On the worker, around the handler of a message that carried `context`: make `context`
    /// current while `handler` runs (and, if you like, run it in a span). Call `handler`
    /// exactly once, on the calling thread, before returning.
    func withContext(_ context: any Sendable, delivery: MessageDelivery, _ handler: () -> Void)
}

/// The message a carried context is restored for, given to
/// ``MessageContextPropagation/withContext(_:delivery:_:)``.
public struct MessageDelivery: Sendable {
    /// The actor that handles it.
    public let actor: ActorAddress
    /// The actor's message type (for a ``HandlerActor``, ``AnyMessage``).
    public let messageType: any Any.Type
    /// Whether the message is an ask, whose reply its sender awaits.
    public let isAsk: Bool
}
