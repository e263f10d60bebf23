internal import TroupeLocks
import Synchronization
import Troupe

/// Why a topic could not be created or a subscription made.
public enum PubSubError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Topic names must not be empty.
    case emptyTopicName
    /// The topic exists with another payload type: each name carries one payload type.
    case payloadTypeMismatch(topic: String, existing: String, requested: String)
    /// This actor or pool is already subscribed to the topic (unsubscribe first to change its
    /// mapping).
    case alreadySubscribed(topic: String, subscriber: String)
    /// The actor (or every member of the pool) has stopped: it would never receive anything.
    case subscriberStopped(topic: String, subscriber: String)
    /// The subscriber belongs to another ``ActorSystem`` than the broker: the broker could not
    /// see it stop.
    case foreignSystem(topic: String, subscriber: String)

    public var description: String {
        switch self {
        case .emptyTopicName:
            "a topic name must not be empty"
        case .payloadTypeMismatch(let topic, let existing, let requested):
            "topic '\(topic)' carries \(existing), not \(requested); use another name for another payload type"
        case .alreadySubscribed(let topic, let subscriber):
            "\(subscriber) is already subscribed to topic '\(topic)'; unsubscribe it first to change its mapping"
        case .subscriberStopped(let topic, let subscriber):
            "\(subscriber) has stopped and cannot subscribe to topic '\(topic)'"
        case .foreignSystem(let topic, let subscriber):
            "\(subscriber) belongs to another actor system than the broker of topic '\(topic)'"
        }
    }
}

/// How a pool subscribed to a topic receives each publication.
public enum PoolDelivery: Sendable, Hashable {
    /// One member takes each publication, chosen by the pool's ``PoolRouting`` (with
    /// `.leastLoaded`, an available member): ActorKit's pool subscription.
    case oneMember
    /// Every member gets its own copy.
    case everyMember
}

/// The publish/subscribe broker of one ``ActorSystem``: typed topics that actors and pools
/// subscribe to (ActorKit's notifications, with a payload type checked by the compiler).
///
/// ```swift
/// let pubsub = PubSub(system: system)           // or: system.install(PubSubPlugin()); try system.pubSub()
/// let prices = try pubsub.topic("prices", of: Double.self)
/// try prices.subscribe(trader) { .priceChanged($0) }   // maps the payload into the actor's Message
/// try prices.subscribe(pricers, delivery: .oneMember) { .reprice($0) }
/// prices.publish(101.5)
/// ```
///
/// - A subscriber that stops is unsubscribed automatically (the broker watches
///   ``SystemHooks/onActorStopped(_:)``; pools are dropped by the first publication that finds
///   every member stopped): nothing leaks and later publications make no dead letters.
/// - Ordering: a publication is told to each subscriber in turn on the publishing thread, so
///   each subscriber sees one publisher's publications in publish order. (A pool with
///   ``PoolDelivery/oneMember`` spreads them over its members, which run concurrently.)
/// - A publication enqueued for an actor that then stops before handling it becomes a dead
///   letter with reason ``DeadLetterReason/recipientStopped``, as for any `tell`.
///
/// Thread-safety: `Sendable`. Publish, subscribe and unsubscribe from any thread, actors
/// included. Publishing takes one uncontended-in-steady-state mutex per publication, only to
/// read the topic's subscriber snapshot (an immutable copy-on-write array), then tells every
/// subscriber with no lock held: no lock per subscriber. Subscribing and unsubscribing take the
/// broker's mutex, then the topic's, and copy the topic's array when a publisher still holds
/// the previous snapshot.
///
/// Create one broker per system (each broker adds a stop observer to the system's hooks,
/// which stays registered, inert, after the broker is gone).
public final class PubSub: Sendable {
    let core: PubSubCore

    /// A broker for `system`'s actors and pools.
    public init(system: ActorSystem) {
        core = PubSubCore(system: system)
        system.hooks.onActorStopped { [weak core] address in core?.actorStopped(address) }
    }

    /// A broker bound to the system of its first subscriber; its stop observer is installed by
    /// ``PubSubPlugin`` through the registrar.
    init(unboundCore: PubSubCore) { core = unboundCore }

    deinit {
        // Topics and the broker's index point at each other; dropping the broker breaks that.
        core.close()
    }

    /// The topic `name` carrying `Payload`, created on first use. Fails for an empty name or
    /// when the name already carries another payload type.
    public func topic<Payload: Sendable>(_ name: String, of payload: Payload.Type = Payload.self) throws(PubSubError) -> Topic<Payload> {
        try core.topic(name, of: payload)
    }

    /// The names of the topics created so far, sorted.
    public var topicNames: [String] { core.topicNames }

    /// Publishes `payload` on the topic `name` (created if needed); returns how many
    /// subscribers took it. See ``Topic/publish(_:)``.
    @discardableResult
    public func publish<Payload: Sendable>(_ payload: Payload, to name: String) throws(PubSubError) -> Int {
        try topic(name, of: Payload.self).publish(payload)
    }

    /// Ends a subscription; returns whether it was still active.
    @discardableResult
    public func unsubscribe(_ subscription: Subscription) -> Bool { subscription.cancel() }

    /// Unsubscribes `ref` from every topic; returns from how many.
    @discardableResult
    public func unsubscribeAll<Message: Sendable>(_ ref: ActorRef<Message>) -> Int {
        core.actorStopped(ref.address)
    }

    /// How many topics `ref` is subscribed to (for monitoring and tests).
    public func subscriptionCount<Message: Sendable>(of ref: ActorRef<Message>) -> Int {
        core.subscriptionCount(of: ref.address)
    }
}

/// An active subscription, returned by the `subscribe` methods of ``Topic``. Keeping it is
/// optional: ``Topic/unsubscribe(_:)-(ActorRef<Message>)`` removes an actor by its ref, and a
/// stopped actor is removed automatically.
public struct Subscription: Sendable, Hashable, CustomStringConvertible {
    let id: UInt64
    let topicBox: any AnyTopic
    /// The topic's name.
    public var topic: String { topicBox.name }
    /// Whom the subscription delivers to.
    public let subscriber: String

    /// Ends the subscription; returns whether it was still active. Publications already told to
    /// the subscriber are still delivered.
    @discardableResult
    public func cancel() -> Bool { topicBox.cancel(id: id) }

    /// Whether the subscription still delivers.
    public var isActive: Bool { topicBox.contains(id: id) }

    public static func == (lhs: Subscription, rhs: Subscription) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
    public var description: String { "Subscription(#\(id) \(subscriber) to '\(topic)')" }
}

/// Who receives a topic's publications: an actor (by address) or a pool (by identity).
enum SubscriberKey: Hashable, Sendable {
    case actor(ActorAddress)
    case pool(ObjectIdentifier)
}

/// What one delivery attempt did.
enum DeliveryAttempt {
    case delivered
    case deadLettered
    /// The subscriber had stopped: nothing was sent (no dead letter).
    case skippedStopped
}

/// One subscriber of a topic. Immutable: the delivery closure holds the ref (or pool) and the
/// payload mapping.
struct Subscriber<Payload: Sendable>: Sendable {
    let id: UInt64
    let key: SubscriberKey
    let deliver: @Sendable (Payload) -> DeliveryAttempt
}

/// What the broker's index needs of a topic, whatever its payload type.
protocol AnyTopic: AnyObject, Sendable {
    var name: String { get }
    var payloadTypeName: String { get }
    func cancel(id: UInt64) -> Bool
    func contains(id: UInt64) -> Bool
    /// Removes the subscriber with `key`, under the topic's mutex. Caller holds the broker's.
    func removeLocked(key: SubscriberKey) -> Bool
    /// Drops every subscriber (the broker is gone).
    func removeAllSubscribers()
}

/// The broker's shared state: topics by name, and which topics each actor is subscribed to
/// (so that its stop removes it everywhere).
///
/// Lock order: `state` (the broker's mutex), then a topic's `subscribers` mutex. Publishing
/// takes only the topic's.
final class PubSubCore: Sendable {
    struct State {
        var topics: [String: any AnyTopic] = [:]
        /// For each subscribed actor, the topics it is subscribed to.
        var byActor: [ActorAddress: [ObjectIdentifier: any AnyTopic]] = [:]
        /// The system subscribers must belong to (nil until the first subscription of a
        /// plugin-made broker).
        var system: ObjectIdentifier?
        var closed = false
    }

    let state: Locked<State>
    private let nextID = Atomic<UInt64>(1)

    init(system: ActorSystem?) {
        state = Locked(State(system: system.map(ObjectIdentifier.init)))
    }

    func makeID() -> UInt64 { nextID.add(1, ordering: .relaxed).oldValue }

    func topic<Payload: Sendable>(_ name: String, of payload: Payload.Type) throws(PubSubError) -> Topic<Payload> {
        guard !name.isEmpty else { throw .emptyTopicName }
        let found: Result<Topic<Payload>, PubSubError> = state.withLock { state in
            if let existing = state.topics[name] {
                guard let typed = existing as? Topic<Payload> else {
                    return .failure(.payloadTypeMismatch(topic: name, existing: existing.payloadTypeName,
                                                         requested: String(reflecting: Payload.self)))
                }
                return .success(typed)
            }
            let created = Topic<Payload>(name: name, core: self)
            if !state.closed { state.topics[name] = created }
            return .success(created)
        }
        return try found.get()
    }

    var topicNames: [String] { state.withLock { $0.topics.keys.sorted() } }

    /// Runs `body` under the broker's mutex after checking that `system` is the broker's
    /// (binding an unbound broker to it).
    func withSystemChecked<Value>(_ system: ActorSystem, topic: String, subscriber: String,
                                  _ body: (inout State) -> Result<Value, PubSubError>) -> Result<Value, PubSubError> {
        state.withLock { state in
            let id = ObjectIdentifier(system)
            if let bound = state.system, bound != id {
                return .failure(.foreignSystem(topic: topic, subscriber: subscriber))
            }
            state.system = id
            return body(&state)
        }
    }

    /// Removes the actor at `address` from every topic; returns from how many. Called by the
    /// stop observer on the stopping actor's worker thread (quick: one dictionary removal and
    /// one array copy per topic it was subscribed to).
    @discardableResult
    func actorStopped(_ address: ActorAddress) -> Int {
        state.withLock { state in
            guard let topics = state.byActor.removeValue(forKey: address) else { return 0 }
            var removed = 0
            for topic in topics.values where topic.removeLocked(key: .actor(address)) { removed += 1 }
            return removed
        }
    }

    func subscriptionCount(of address: ActorAddress) -> Int {
        state.withLock { $0.byActor[address]?.count ?? 0 }
    }

    func close() {
        let topics: [any AnyTopic] = state.withLock { state in
            state.closed = true
            let all = Array(state.topics.values)
            state.topics.removeAll()
            state.byActor.removeAll()
            return all
        }
        for topic in topics { topic.removeAllSubscribers() }
    }
}

/// A named channel of `Payload` values. Get one from ``PubSub/topic(_:of:)``; keep it to
/// publish and subscribe without a lookup by name.
///
/// Thread-safety: `Sendable`; see ``PubSub`` for the locking.
public final class Topic<Payload: Sendable>: AnyTopic, CustomStringConvertible {
    /// The topic's name, unique within its broker.
    public let name: String
    let core: PubSubCore
    /// The current subscribers: replaced as a whole (copy-on-write) under this mutex;
    /// publishers copy the reference out and iterate it with no lock held.
    private let subscribers = Locked<[Subscriber<Payload>]>([])

    init(name: String, core: PubSubCore) {
        self.name = name
        self.core = core
    }

    var payloadTypeName: String { String(reflecting: Payload.self) }

    public var description: String { "Topic<\(payloadTypeName)>('\(name)', \(subscriberCount) subscribers)" }

    /// The current number of subscribers.
    public var subscriberCount: Int { subscribers.withLock { $0.count } }

    // MARK: Publishing

    /// Tells `payload`, mapped into each subscriber's message type, to every subscriber, in
    /// subscription order, on the calling thread. Never blocks on an actor; takes one mutex to
    /// read the subscriber snapshot and none per subscriber. Subscribers that have stopped are
    /// skipped silently (and dropped). Returns how many subscribers took the publication.
    @discardableResult
    public func publish(_ payload: Payload) -> Int {
        let current = subscribers.withLock { $0 }
        var delivered = 0
        var stoppedPools: [UInt64] = []
        for subscriber in current {
            switch subscriber.deliver(payload) {
            case .delivered: delivered += 1
            case .deadLettered: break
            case .skippedStopped:
                // Actors are removed by the stop observer; pools have none, so drop them here.
                if case .pool = subscriber.key { stoppedPools.append(subscriber.id) }
            }
        }
        for id in stoppedPools { _ = cancel(id: id) }
        return delivered
    }

    // MARK: Actor subscribers

    /// Subscribes `ref`: each publication is told to it as `map(payload)`. Fails if the actor
    /// has stopped, is already subscribed here, or belongs to another system.
    @discardableResult
    public func subscribe<Message: Sendable>(
        _ ref: ActorRef<Message>,
        map: @escaping @Sendable (Payload) -> Message
    ) throws(PubSubError) -> Subscription {
        let label = ref.description
        guard !ref.isStopped else { throw .subscriberStopped(topic: name, subscriber: label) }
        let address = ref.address
        let subscriber = Subscriber<Payload>(id: core.makeID(), key: .actor(address)) { payload in
            // Skipping a stopped actor here avoids dead-letter noise in the window between its
            // stop and the stop observer removing it.
            if ref.isStopped { return .skippedStopped }
            return ref.tell(map(payload)).isEnqueued ? .delivered : .deadLettered
        }
        let added: Result<Void, PubSubError> = core.withSystemChecked(ref.system, topic: name, subscriber: label) { state in
            guard insertLocked(subscriber) else { return .failure(.alreadySubscribed(topic: name, subscriber: label)) }
            state.byActor[address, default: [:]][ObjectIdentifier(self)] = self
            return .success(())
        }
        try added.get()
        // The stop observer may have run before the insertion above; it stores the stopped
        // state before it runs, so the actor is seen stopped here and removed.
        if ref.isStopped {
            core.actorStopped(address)
            throw .subscriberStopped(topic: name, subscriber: label)
        }
        return Subscription(id: subscriber.id, topicBox: self, subscriber: label)
    }

    /// Subscribes an actor whose message type is the payload type.
    @discardableResult
    public func subscribe(_ ref: ActorRef<Payload>) throws(PubSubError) -> Subscription {
        try subscribe(ref) { $0 }
    }

    /// Unsubscribes `ref` (ActorKit's `unsubscribe:`); returns whether it was subscribed.
    @discardableResult
    public func unsubscribe<Message: Sendable>(_ ref: ActorRef<Message>) -> Bool {
        let address = ref.address
        return core.state.withLock { state in
            guard removeLocked(key: .actor(address)) else { return false }
            state.byActor[address]?[ObjectIdentifier(self)] = nil
            if state.byActor[address]?.isEmpty == true { state.byActor[address] = nil }
            return true
        }
    }

    /// Whether `ref` is subscribed.
    public func isSubscribed<Message: Sendable>(_ ref: ActorRef<Message>) -> Bool {
        let key = SubscriberKey.actor(ref.address)
        return subscribers.withLock { $0.contains { $0.key == key } }
    }

    // MARK: Pool subscribers

    /// Subscribes `pool`: with ``PoolDelivery/oneMember`` each publication goes to one member
    /// picked by the pool's routing (use `.leastLoaded` for "an available member"); with
    /// ``PoolDelivery/everyMember`` to all of them. Dropped once every member has stopped.
    @discardableResult
    public func subscribe<Message: Sendable>(
        _ pool: ActorPool<Message>,
        delivery: PoolDelivery = .oneMember,
        map: @escaping @Sendable (Payload) -> Message
    ) throws(PubSubError) -> Subscription {
        let label = pool.description
        guard !pool.isStopped else { throw .subscriberStopped(topic: name, subscriber: label) }
        let subscriber = Subscriber<Payload>(id: core.makeID(), key: .pool(ObjectIdentifier(pool))) { payload in
            if pool.isStopped { return .skippedStopped }
            switch delivery {
            case .oneMember: return pool.tell(map(payload)).isEnqueued ? .delivered : .deadLettered
            case .everyMember: return pool.broadcast(map(payload)) > 0 ? .delivered : .deadLettered
            }
        }
        let added: Result<Void, PubSubError> = core.withSystemChecked(pool.system, topic: name, subscriber: label) { _ in
            insertLocked(subscriber) ? .success(()) : .failure(.alreadySubscribed(topic: name, subscriber: label))
        }
        try added.get()
        return Subscription(id: subscriber.id, topicBox: self, subscriber: label)
    }

    /// Subscribes a pool whose message type is the payload type.
    @discardableResult
    public func subscribe(_ pool: ActorPool<Payload>, delivery: PoolDelivery = .oneMember) throws(PubSubError) -> Subscription {
        try subscribe(pool, delivery: delivery) { $0 }
    }

    /// Unsubscribes `pool`; returns whether it was subscribed.
    @discardableResult
    public func unsubscribe<Message: Sendable>(_ pool: ActorPool<Message>) -> Bool {
        let key = SubscriberKey.pool(ObjectIdentifier(pool))
        return core.state.withLock { _ in removeLocked(key: key) }
    }

    // MARK: Internals (AnyTopic)

    /// Appends unless the key is already subscribed. Caller holds the broker's mutex.
    private func insertLocked(_ subscriber: Subscriber<Payload>) -> Bool {
        subscribers.withLock { list in
            guard !list.contains(where: { $0.key == subscriber.key }) else { return false }
            list.append(subscriber)
            return true
        }
    }

    func removeLocked(key: SubscriberKey) -> Bool {
        subscribers.withLock { list in
            guard let index = list.firstIndex(where: { $0.key == key }) else { return false }
            list.remove(at: index)
            return true
        }
    }

    func cancel(id: UInt64) -> Bool {
        core.state.withLock { state in
            let removed: SubscriberKey? = subscribers.withLock { list in
                guard let index = list.firstIndex(where: { $0.id == id }) else { return nil }
                return list.remove(at: index).key
            }
            guard let removed else { return false }
            if case .actor(let address) = removed {
                state.byActor[address]?[ObjectIdentifier(self)] = nil
                if state.byActor[address]?.isEmpty == true { state.byActor[address] = nil }
            }
            return true
        }
    }

    func contains(id: UInt64) -> Bool {
        subscribers.withLock { $0.contains { $0.id == id } }
    }

    func removeAllSubscribers() {
        subscribers.withLock { $0.removeAll() }
    }
}
