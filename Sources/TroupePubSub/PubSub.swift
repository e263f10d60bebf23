internal import TroupeLocks
import Synchronization
import Troupe

/// The publish/subscribe broker of one `ActorSystem`: typed topics that actors and pools
/// subscribe to, each carrying one payload type, checked by the compiler.
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
///   `SystemHooks.onActorStopped(_:)`; pools are dropped by the first publication that finds
///   every member stopped): nothing leaks and later publications make no dead letters.
/// - Ordering: a publication is told to each subscriber in turn on the publishing thread, so
///   each subscriber sees one publisher's publications in publish order. (A pool with
///   ``PoolDelivery/oneMember`` spreads them over its members, which run concurrently.)
/// - A publication enqueued for an actor that then stops before handling it becomes a dead
///   letter with reason `DeadLetterReason.recipientStopped`, as for any `tell`.
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
    public func topic<Payload: Sendable>(
        _ name: String, of payload: Payload.Type = Payload.self
    ) throws(PubSubError) -> Topic<Payload> {
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
