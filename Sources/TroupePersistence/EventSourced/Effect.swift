import Troupe

/// What a command does: events to persist (atomically, all or none), then what to run once
/// they are stored. Without events the follow-ups run at once, with the current state.
///
/// ```swift
/// return .persist(.deposited(10), .feeCharged(1))
///     .thenReply(reply) { $0.balance }
///     .thenRun { state in log("balance now \(state.balance)") }
/// ```
///
/// A reply given with ``thenReply(_:_:)`` is failed with the ``PersistenceError`` when the
/// write fails, so an asker learns of it at once.
public struct Effect<Actor: EventSourcedActor> {
    var events: [Actor.Event]
    /// The follow-ups, in the order given, each composed into one closure per outcome: no
    /// array of follow-ups (whose generic metadata unspecialized code would look up per command).
    var succeeded: ((Actor.State) -> Void)?
    var failed: ((PersistenceError) -> Void)?
    var stops = false

    init(events: [Actor.Event]) { self.events = events }

    /// Persists nothing and does nothing.
    public static var none: Self { Self(events: []) }

    /// Persists `events`, atomically.
    public static func persist(_ events: Actor.Event...) -> Self { Self(events: events) }

    /// Persists `events`, atomically (none: the follow-ups run at once).
    public static func persist(_ events: [Actor.Event]) -> Self { Self(events: events) }

    /// Persists nothing and answers `reply` with `value` at once.
    public static func reply<Value: Sendable>(_ reply: Reply<Value>, _ value: Value) -> Self {
        Self.none.thenReply(reply) { _ in value }
    }

    /// Once the events are stored, answers `reply` with `value(newState)`; if the write fails,
    /// fails it with the error.
    public func thenReply<Value: Sendable>(_ reply: Reply<Value>, _ value: @escaping (Actor.State) -> Value) -> Self {
        var effect = self
        effect.succeeded = composed(succeeded) { reply.succeed(value($0)) }
        effect.failed = composed(failed) { reply.fail($0) }
        return effect
    }

    /// Once the events are stored, runs `body` with the new state (on the actor).
    public func thenRun(_ body: @escaping (Actor.State) -> Void) -> Self {
        var effect = self
        effect.succeeded = composed(succeeded, body)
        return effect
    }

    /// Once the events are stored (and the follow-ups ran), stops the actor.
    public func thenStop() -> Self {
        var effect = self
        effect.stops = true
        return effect
    }

    func succeed(with state: Actor.State) { succeeded?(state) }

    func fail(_ error: PersistenceError) { failed?(error) }
}

/// Runs `earlier` (if any), then `next`: how an effect's follow-ups keep their order.
@inline(__always)
func composed<Value>(_ earlier: ((Value) -> Void)?, _ next: @escaping (Value) -> Void) -> (Value) -> Void {
    guard let earlier else { return next }
    return { value in
        earlier(value)
        next(value)
    }
}
