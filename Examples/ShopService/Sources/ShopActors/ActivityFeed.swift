import Troupe
import TroupePubSub
import TroupeSupervision

/// A change to a cart, published on the `cart-changes` topic.
public struct CartChange: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable { case added, removed, checkedOut }
    public let user: String
    public let item: String?
    public let kind: Kind
}

/// The `cart-changes` topic, and an actor subscribed to it that keeps the latest changes and
/// counts them by kind (what an HTTP client polls, or a websocket would push).
public struct ActivityFeed: Sendable {
    /// The broker: kept, because a broker that goes closes its topics.
    public let pubsub: PubSub
    public let topic: Topic<CartChange>
    public let log: ActorRef<ActivityLog.Message>

    public init(system: ActorSystem, pubsub: PubSub) throws {
        self.pubsub = pubsub
        topic = try pubsub.topic("cart-changes", of: CartChange.self)
        log = system.spawn(ActivityLog(), options: SpawnOptions(name: "activity"))
        try topic.subscribe(log) { .changed($0) }
    }

    /// The feed with its log supervised under `activity` (a restart keeps the log's ref, so the
    /// subscription holds).
    public init(supervisor: Supervisor, pubsub: PubSub) throws {
        self.pubsub = pubsub
        topic = try pubsub.topic("cart-changes", of: CartChange.self)
        log = try supervisor.supervise(id: "activity") { ActivityLog() }
        try topic.subscribe(log) { .changed($0) }
    }

    @discardableResult
    public func publish(_ change: CartChange) -> Int { topic.publish(change) }
}

/// Keeps the last 100 changes and counts every change by kind.
public struct ActivityLog: ActorDefinition {
    public enum Message: Sendable {
        case changed(CartChange)
        case summary(Reply<ActivitySummary>)
    }

    var recent: [CartChange] = []
    var counts: [String: Int] = [:]

    public init() {}

    public mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .changed(let change):
            counts[change.kind.rawValue, default: 0] += 1
            recent.append(change)
            if recent.count > 100 { recent.removeFirst(recent.count - 100) }
        case .summary(let reply):
            reply.succeed(ActivitySummary(counts: counts, recent: Array(recent.suffix(10))))
        }
    }
}

public struct ActivitySummary: Sendable, Codable, Equatable {
    public let counts: [String: Int]
    public let recent: [CartChange]
}
