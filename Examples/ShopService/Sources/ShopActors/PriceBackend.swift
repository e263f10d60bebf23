import Troupe

/// A slow backend: each price takes `latency` to look up (a call to another service, say), so
/// the shop runs a pool of them. The wait is a task off the actor (`context.run`), so a member
/// takes the next request meanwhile instead of blocking its worker.
public struct PriceBackend: ActorDefinition {
    public enum Message: Sendable {
        case price(of: String, Reply<Int>)
    }

    let latency: Duration

    public init(latency: Duration) { self.latency = latency }

    public func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .price(let item, let reply):
            let latency = self.latency
            Task(executorPreference: context.system.taskExecutor) {
                try? await Task.sleep(for: latency)
                reply.succeed(PriceBackend.price(of: item))
            }
        }
    }

    /// A deterministic price in cents (so that tests and clients can check totals).
    public static func price(of item: String) -> Int {
        100 + item.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) % 10_000 }
    }
}
