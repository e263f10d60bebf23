import Troupe

/// Who receives a topic's publications: an actor (by address) or a pool (by identity).
enum SubscriberKey: Hashable, Sendable {
    case actor(ActorAddress)
    case pool(ObjectIdentifier)
}
