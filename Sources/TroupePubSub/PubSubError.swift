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
    /// The subscriber belongs to another `ActorSystem` than the broker: the broker could not
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
