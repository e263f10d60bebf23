import Troupe

/// A durable actor whose state is the sum of its events: commands come in, the handler decides
/// which events to persist (an ``Effect``), and once the store has them the events are applied
/// to the state and the effect's replies and side effects run. At spawn (and after a restart)
/// the state is rebuilt from the latest snapshot and the events after it.
///
/// ```swift
/// struct Account: EventSourcedActor {
///     enum Command: Sendable { case deposit(Int, Reply<Int>), balance(Reply<Int>) }
///     enum Event: Codable, Sendable { case deposited(Int) }
///     struct State: Codable, Sendable { var balance = 0 }
///
///     let persistenceID: PersistenceID
///     var emptyState: State { State() }
///     static let eventCodec = PersistenceCodec<Event>.json(typeName: "account-event")
///
///     func handle(_ command: Command, state: State, context: EventSourcedContext<Self>) -> Effect<Self> {
///         switch command {
///         case .deposit(let amount, let reply):
///             return .persist(.deposited(amount)).thenReply(reply) { $0.balance }
///         case .balance(let reply):
///             return .reply(reply, state.balance)
///         }
///     }
///     func apply(_ event: Event, to state: inout State) {
///         switch event { case .deposited(let amount): state.balance += amount }
///     }
/// }
/// let account = system.spawn(persistent: Account(persistenceID: "account-42"), journal: journal)
/// let balance = try await account.ask { .deposit(10, $0) }   // answered once the event is durable
/// ```
///
/// While a write or the recovery is in flight, new commands wait in a bounded stash and are
/// handled, in order, when it completes. A write the store refuses or fails fails the
/// command's replies with a ``PersistenceError`` and then the actor (supervision decides; a
/// restart recovers from what is stored, and nothing acknowledged is lost).
public protocol EventSourcedActor: Sendable {
    associatedtype Command: Sendable
    associatedtype Event: Sendable
    associatedtype State: Sendable

    /// Where this actor's history is stored; one live writer per identity.
    var persistenceID: PersistenceID { get }
    /// The state before any event.
    var emptyState: State { get }
    /// How events are stored (name, version, upcasters).
    static var eventCodec: PersistenceCodec<Event> { get }
    /// When to store snapshots of the state (default: never).
    static var snapshots: SnapshotPolicy<State> { get }

    /// Decides what a command does. Runs on the actor, with the state as of every persisted
    /// event; throwing fails the actor, like a throwing `receive`.
    func handle(_ command: Command, state: State, context: EventSourcedContext<Self>) throws -> Effect<Self>
    /// Applies one event to the state: after it is stored, and during recovery. Must be
    /// deterministic and free of side effects (it runs again at every recovery).
    func apply(_ event: Event, to state: inout State)
    /// The tags stored with `event`, by which the read side finds it across actors
    /// (``EventsByTagQuery/eventsByTag(_:after:follow:pollInterval:pageSize:)``); default none.
    /// A tag is 1 to 256 bytes of UTF-8 without control characters: a write with another fails
    /// with ``PersistenceError/invalidTag(_:tag:reason:)``.
    func tags(for event: Event) -> Set<String>
}

extension EventSourcedActor {
    public static var snapshots: SnapshotPolicy<State> { .never }

    public func tags(for event: Event) -> Set<String> { [] }
}

/// When a durable actor stores its state so that recovery replays fewer events.
public struct SnapshotPolicy<State>: Sendable {
    /// Store a snapshot after every `every` persisted events.
    let every: Int?
    /// Keep the newest `keep` snapshots.
    let keep: Int
    let codec: PersistenceCodec<State>?

    /// No snapshots: recovery replays every event.
    public static var never: Self { Self(every: nil, keep: 1, codec: nil) }

    /// A snapshot after every `every` events (and the newest `keep` kept), encoded by `codec`.
    public static func every(_ every: Int, keep: Int = 2, codec: PersistenceCodec<State>) -> Self {
        precondition(every >= 1, "snapshot every 1 event or more")
        precondition(keep >= 1, "keep at least one snapshot")
        return Self(every: every, keep: keep, codec: codec)
    }
}

extension SnapshotPolicy where State: Codable & Sendable {
    /// A snapshot after every `every` events, as JSON named `typeName`.
    public static func every(_ every: Int, keep: Int = 2, typeName: String, version: Int = 1) -> Self {
        .every(every, keep: keep, codec: .json(typeName: typeName, version: version))
    }
}

/// What a command handler can see and use besides the state.
public struct EventSourcedContext<Actor: EventSourcedActor> {
    /// The actor's own context (its ref, timers, children, `run`).
    public let actor: ActorContext<PersistentMessage<Actor.Command>>
    public let persistenceID: PersistenceID
    /// The number of the last stored event.
    public let lastSequenceNumber: Int64
}
