import Troupe

/// A counter with an enum protocol: the smallest actor that both takes messages and answers
/// asks.
public struct Counter: ActorDefinition {
    public enum Message: Sendable {
        case add(Int)
        case get(Reply<Int>)
    }

    var total: Int

    public init(total: Int = 0) { self.total = total }

    public mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .add(let amount): total += amount
        case .get(let reply): reply.succeed(total)
        }
    }
}
