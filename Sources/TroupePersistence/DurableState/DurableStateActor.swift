import Troupe

/// A durable actor that saves its whole state, not events: each command may replace the
/// state, which is stored with the next revision (compare-and-set on the revision it read),
/// and the reply goes out once it is stored. At spawn the latest saved state is read back.
///
/// ```swift
/// struct Cart: DurableStateActor {
///     enum Command: Sendable { case add(String, Reply<Int>), items(Reply<[String]>) }
///     let persistenceID: PersistenceID
///     var emptyState: [String] { [] }
///     static let stateCodec = PersistenceCodec<[String]>.json(typeName: "cart")
///
///     func handle(_ command: Command, state: [String], context: DurableStateContext<Self>) -> StateEffect<Self> {
///         switch command {
///         case .add(let item, let reply): .save(state + [item]).thenReply(reply) { $0.count }
///         case .items(let reply): .reply(reply, state)
///         }
///     }
/// }
/// ```
///
/// Choose it over ``EventSourcedActor`` when the history does not matter and the state is
/// small; a save rewrites the whole state.
public protocol DurableStateActor: Sendable {
    associatedtype Command: Sendable
    associatedtype State: Sendable

    /// Where the state is stored; one live writer per identity.
    var persistenceID: PersistenceID { get }
    /// The state before the first save.
    var emptyState: State { get }
    /// How the state is stored (name, version, upcasters).
    static var stateCodec: PersistenceCodec<State> { get }

    /// Decides what a command does, given the stored state.
    func handle(_ command: Command, state: State, context: DurableStateContext<Self>) throws -> StateEffect<Self>
}

/// What a durable-state handler can see and use besides the state.
public struct DurableStateContext<Actor: DurableStateActor> {
    /// The actor's own context (its ref, timers, children, `run`).
    public let actor: ActorContext<PersistentMessage<Actor.Command>>
    public let persistenceID: PersistenceID
    /// The stored state's revision (0: never saved).
    public let revision: Int64
}

/// What a durable-state command does: maybe a new state to save, then what to run once it is
/// stored. Without a new state the follow-ups run at once.
public struct StateEffect<Actor: DurableStateActor> {
    var newState: Actor.State?
    /// The follow-ups, in the order given, for each outcome.
    var succeeded = FollowUps<Actor.State>()
    var failed = FollowUps<PersistenceError>()
    var stops = false

    /// Saves nothing and does nothing.
    public static var none: Self { Self(newState: nil) }

    /// Saves `state` as the next revision.
    public static func save(_ state: Actor.State) -> Self { Self(newState: state) }

    /// Saves nothing and answers `reply` with `value` at once.
    public static func reply<Value: Sendable>(_ reply: Reply<Value>, _ value: Value) -> Self {
        Self.none.thenReply(reply) { _ in value }
    }

    /// Once the state is stored, answers `reply` with `value(state)`; if the save fails, fails
    /// it with the error.
    public func thenReply<Value: Sendable>(_ reply: Reply<Value>, _ value: @escaping (Actor.State) -> Value) -> Self {
        var effect = self
        effect.succeeded.append { reply.succeed(value($0)) }
        effect.failed.append { reply.fail($0) }
        return effect
    }

    /// Once the state is stored, runs `body` with it (on the actor).
    public func thenRun(_ body: @escaping (Actor.State) -> Void) -> Self {
        var effect = self
        effect.succeeded.append(body)
        return effect
    }

    /// Once the state is stored (and the follow-ups ran), stops the actor.
    public func thenStop() -> Self {
        var effect = self
        effect.stops = true
        return effect
    }

    func succeed(with state: Actor.State) { succeeded.run(state) }
    func fail(_ error: PersistenceError) { failed.run(error) }
}
