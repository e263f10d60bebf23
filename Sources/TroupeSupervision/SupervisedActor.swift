internal import TroupeLocks
import Troupe

/// A supervised actor whose message type is checked where it is used (``Supervisor/subscript(_:)->SupervisedActor?``).
public struct SupervisedActor: Sendable, CustomStringConvertible {
    /// The child's id in its supervisor.
    public let id: String
    let ref: any SupervisedRef

    /// The actor's address (it stays the same across restarts).
    public var address: ActorAddress { ref.address }

    /// Whether the actor has stopped.
    public var isStopped: Bool { ref.isStopped }

    /// Sends `message`. Fails with ``SupervisionError/typeMismatch(id:expected:actual:)``,
    /// naming the actor's message type, when the actor does not accept `message`'s type (an
    /// actor with per-type handlers accepts any value; its handlers decide).
    @discardableResult
    public func tell<Message: Sendable>(_ message: Message) throws(SupervisionError) -> TellOutcome {
        guard let outcome = ref.tellIfAccepted(message) else {
            throw .typeMismatch(
                id: id, expected: "an actor accepting \(Message.self)", actual: "ActorRef<\(ref.messageTypeName)>")
        }
        return outcome
    }

    /// The typed ref; fails with ``SupervisionError/typeMismatch(id:expected:actual:)`` when the
    /// actor accepts another message type.
    public func ref<Message: Sendable>(
        as type: Message.Type = Message.self
    ) throws(SupervisionError) -> ActorRef<Message> {
        guard let typed = ref as? ActorRef<Message> else {
            throw .typeMismatch(
                id: id, expected: "ActorRef<\(Message.self)>", actual: "ActorRef<\(ref.messageTypeName)>")
        }
        return typed
    }

    public var description: String { "SupervisedActor(\(id): ActorRef<\(ref.messageTypeName)> \(address))" }
}
