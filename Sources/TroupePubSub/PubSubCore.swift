internal import TroupeLocks
import Synchronization
import Troupe

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
                    return .failure(
                        .payloadTypeMismatch(
                            topic: name, existing: existing.payloadTypeName,
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
    func withSystemChecked<Value>(
        _ system: ActorSystem, topic: String, subscriber: String,
        _ body: (inout State) -> Result<Value, PubSubError>
    ) -> Result<Value, PubSubError> {
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
