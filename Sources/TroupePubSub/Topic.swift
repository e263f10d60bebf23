internal import TroupeLocks
import Synchronization
import Troupe

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
        let added: Result<Void, PubSubError> = core.withSystemChecked(ref.system, topic: name, subscriber: label) {
            state in
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

    /// Unsubscribes `ref`; returns whether it was subscribed.
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
        let added: Result<Void, PubSubError> = core.withSystemChecked(pool.system, topic: name, subscriber: label) {
            _ in
            insertLocked(subscriber) ? .success(()) : .failure(.alreadySubscribed(topic: name, subscriber: label))
        }
        try added.get()
        return Subscription(id: subscriber.id, topicBox: self, subscriber: label)
    }

    /// Subscribes a pool whose message type is the payload type.
    @discardableResult
    public func subscribe(
        _ pool: ActorPool<Payload>, delivery: PoolDelivery = .oneMember
    ) throws(PubSubError) -> Subscription {
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
