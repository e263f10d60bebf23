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
    var followUps: [FollowUp] = []
    var stops = false

    struct FollowUp {
        let succeeded: (Actor.State) -> Void
        let failed: ((PersistenceError) -> Void)?
    }

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
        effect.followUps.append(
            FollowUp(succeeded: { reply.succeed(value($0)) }, failed: { reply.fail($0) }))
        return effect
    }

    /// Once the events are stored, runs `body` with the new state (on the actor).
    public func thenRun(_ body: @escaping (Actor.State) -> Void) -> Self {
        var effect = self
        effect.followUps.append(FollowUp(succeeded: body, failed: nil))
        return effect
    }

    /// Once the events are stored (and the follow-ups ran), stops the actor.
    public func thenStop() -> Self {
        var effect = self
        effect.stops = true
        return effect
    }

    func succeed(with state: Actor.State) {
        for followUp in followUps { followUp.succeeded(state) }
    }

    func fail(_ error: PersistenceError) {
        for followUp in followUps { followUp.failed?(error) }
    }
}
