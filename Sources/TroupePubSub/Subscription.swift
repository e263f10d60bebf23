import Troupe

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
