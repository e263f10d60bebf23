import Troupe

/// A reference to a durable actor: send it commands with ``tell(_:)`` and ``ask(timeout:_:)``
/// as to any actor. The underlying ``actorRef`` is for what takes an `ActorRef` (watching,
/// `terminated()`, pools).
public struct PersistentRef<Command: Sendable>: Sendable, Hashable, CustomStringConvertible {
    /// The actor's ref; its messages are ``PersistentMessage/command(_:)``s.
    public let actorRef: ActorRef<PersistentMessage<Command>>

    public init(_ actorRef: ActorRef<PersistentMessage<Command>>) { self.actorRef = actorRef }

    /// Sends `command`; see `ActorRef.tell`.
    @discardableResult
    public func tell(_ command: Command) -> TellOutcome { actorRef.tell(.command(command)) }

    /// Sends a command carrying a reply and waits for the answer (given once the command's
    /// events are stored) or for the timeout; see `ActorRef.ask`.
    nonisolated(nonsending) public func ask<Value: Sendable>(
        timeout: Duration? = nil, _ request: (Reply<Value>) -> Command
    ) async throws(AskError) -> Value {
        try await actorRef.ask(timeout: timeout) { .command(request($0)) }
    }

    /// Stops the actor after the messages already sent to it.
    public func stop() { actorRef.stop() }

    /// Waits until the actor has terminated.
    public func terminated() async -> Terminated { await actorRef.terminated() }

    public var address: ActorAddress { actorRef.address }
    public var description: String { "PersistentRef<\(Command.self)>(\(actorRef.address))" }
}
