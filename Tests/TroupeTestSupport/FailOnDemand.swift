import Troupe

/// An actor that fails on demand: the smallest subject for failure, restart and supervision
/// tests.
public struct FailOnDemand: ActorDefinition {
    public enum Message: Sendable {
        /// Throws ``Failure``.
        case fail
        /// Answers 1.
        case ping(Reply<Int>)
    }

    /// What `.fail` throws.
    public struct Failure: Error {}

    public init() {}

    public func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .fail: throw Failure()
        case .ping(let reply): reply.succeed(1)
        }
    }
}
