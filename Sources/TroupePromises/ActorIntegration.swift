import Synchronization
import Troupe

// MARK: ask → promise

extension MessageTarget {
    /// Sends a request built around a `Reply` (to the actor, or to the member a pool's
    /// routing picks) and returns a promise of the answer, without waiting and without creating
    /// a task. Fails with the `AskError` of the ask (timeout, recipient stopped, no reply,
    /// undeliverable, handler error). The promise completes on the thread that completes the
    /// ask (the replier's worker, or the ask timer's thread).
    ///
    /// ```swift
    /// counter.askPromise { .get($0) }.map { $0 + 1 }
    /// ```
    public func askPromise<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message
    ) -> Promise<Value> {
        let promise = Promise<Value>()
        ask(timeout: timeout, request) { result in promise.complete(result.mapError { $0 }) }
        return promise
    }
}

extension MessageTarget where Message == AnyMessage {
    /// Sends `payload` to an actor with per-type handlers (or a pool of them) and returns a
    /// promise of the handler's answer (of type `Value`). Fails with the `AskError` of the
    /// ask. No task is created: the promise completes on the thread that completes the ask.
    public func askPromise<Payload: Sendable, Value: Sendable>(
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil
    ) -> Promise<Value> {
        let promise = Promise<Value>()
        ask(payload, returning: Value.self, timeout: timeout) { result in promise.complete(result.mapError { $0 }) }
        return promise
    }
}

// MARK: Future reactions returning promises

extension MessageHandlers {
    /// Future reaction returning a promise: the asker is answered with the promise's
    /// value, or fails with `AskError.failed(_:)` carrying its error. The body runs on the
    /// actor; the answer is sent on the thread that completes the promise.
    ///
    /// ```swift
    /// on.future(Login.self) { session, login, context -> Promise<String> in
    ///     session.auth.askPromise { .check(login, $0) }
    /// }
    /// ```
    public mutating func future<Payload: Sendable, Value: Sendable>(
        _ type: Payload.Type,
        _ body: @escaping (inout Actor, Payload, ActorContext<AnyMessage>) throws -> Promise<Value>
    ) {
        future(type, replying: Value.self) { actor, payload, context, reply in
            try body(&actor, payload, context).whenComplete { outcome in
                switch outcome {
                case .success(let value): reply.succeed(value)
                case .failure(let error): reply.fail(error)
                }
            }
        }
    }

    /// Lets promise callbacks registered with ``Promise/then(on:as:_:)`` run on this actor. Call
    /// once in `setup`; without it those callbacks become dead letters.
    public mutating func acceptPromiseCallbacks() {
        void(PromiseCallback<Actor, AnyMessage>.self) { actor, callback, context in
            callback.run(&actor, context: context)
        }
    }
}

// MARK: Callbacks delivered to actors

/// A promise callback in transit to the actor that registered it: the actor runs it from its
/// handler with its own state, so the state stays single-threaded. Runs at most once; if it is
/// dropped unrun (the actor stopped first) that is counted as
/// ``PromiseEvent/droppedActorCallback(actorType:)``.
public final class PromiseCallback<Actor, Message: Sendable>: Sendable {
    private let body: @Sendable (inout Actor, ActorContext<Message>) -> Void
    private let ran = Atomic<Bool>(false)

    init(_ body: @escaping @Sendable (inout Actor, ActorContext<Message>) -> Void) { self.body = body }

    /// Runs the callback on `actor`; call it from the actor's handler. Only the first call runs it.
    public func run(_ actor: inout Actor, context: ActorContext<Message>) {
        guard !ran.exchange(true, ordering: .acquiringAndReleasing) else { return }
        body(&actor, context)
    }

    deinit {
        if !ran.load(ordering: .acquiring) { PromiseDiagnostics.recordDroppedActorCallback(Actor.self) }
    }
}

extension Promise {
    /// Inside an actor: when the promise completes, sends `message(outcome)` to this actor, so the
    /// outcome is handled like any other message, on the actor, in order. Works for every actor.
    /// If the actor has stopped by then, the message becomes a dead letter.
    ///
    /// ```swift
    /// store.askPromise { .load(key, $0) }.deliver(to: context) { .loaded(key, $0) }
    /// ```
    public func deliver<Message: Sendable>(
        to context: ActorContext<Message>,
        _ message: @escaping @Sendable (Outcome) -> Message
    ) {
        let ref = context.ref
        whenComplete { outcome in ref.tell(message(outcome)) }
    }

    /// Inside an actor with per-type handlers that called
    /// `MessageHandlers.acceptPromiseCallbacks()`: runs `body` on that actor, with its state and
    /// a fresh context, as a message sent when the promise completes. If the actor has stopped by
    /// then, `body` does not run (counted as a dropped actor callback).
    ///
    /// ```swift
    /// auth.askPromise { .check(login, $0) }.then(on: context) { (session: inout Session, outcome, _) in
    ///     session.user = try? outcome.get()
    /// }
    /// ```
    public func then<Actor: HandlerActor>(
        on context: ActorContext<AnyMessage>,
        as actorType: Actor.Type = Actor.self,
        _ body: @escaping @Sendable (inout Actor, Outcome, ActorContext<AnyMessage>) -> Void
    ) {
        let ref = context.ref
        whenComplete { outcome in
            ref.tell(PromiseCallback<Actor, AnyMessage> { actor, context in body(&actor, outcome, context) })
        }
    }

    /// Inside an `ActorDefinition` actor whose message has a case carrying a
    /// ``PromiseCallback`` (its `receive` calls `callback.run(&self, context: context)`): runs
    /// `body` on the actor, with its state, as the message `wrap(callback)` sent when the promise
    /// completes. If the actor has stopped by then, `body` does not run.
    ///
    /// ```swift
    /// enum Message: Sendable { case callback(PromiseCallback<Cache, Message>), ... }
    /// promise.then(on: context, via: Message.callback) { (cache: inout Cache, outcome, _) in ... }
    /// ```
    public func then<Actor: ActorDefinition>(
        on context: ActorContext<Actor.Message>,
        via wrap: @escaping @Sendable (PromiseCallback<Actor, Actor.Message>) -> Actor.Message,
        _ body: @escaping @Sendable (inout Actor, Outcome, ActorContext<Actor.Message>) -> Void
    ) {
        let ref = context.ref
        whenComplete { outcome in
            ref.tell(wrap(PromiseCallback<Actor, Actor.Message> { actor, context in body(&actor, outcome, context) }))
        }
    }
}
