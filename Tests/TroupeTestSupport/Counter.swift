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

/// `count` counters in `system`, spawned one after another, where counter `i` has been sent
/// `i / 100` adds if `i` is a multiple of 100 (none otherwise), and every one has answered one
/// ask: the busiest has handled `(count - 1) / 100` adds and the ask, the next one fewer. For
/// rankings over many actors.
public func spawnCountersBusiestEveryHundredth(
    _ count: Int, in system: ActorSystem
) async throws
    -> [ActorRef<Counter.Message>]
{
    let counters = (0..<count).map { _ in system.spawn(Counter()) }
    for (index, ref) in counters.enumerated() where index % 100 == 0 {
        for _ in 0..<(index / 100) { ref.tell(.add(1)) }
    }
    for ref in counters { _ = try await ref.ask { .get($0) } }
    return counters
}
