import Testing
import Troupe

struct Counter: ActorDefinition {
    enum Message: Sendable { case add(Int), get(Reply<Int>) }
    var total = 0
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .add(let n): total += n
        case .get(let reply): reply.succeed(total)
        }
    }
}

@Test func smokeTellAndAsk() async throws {
    let system = ActorSystem()
    let counter = system.spawn(Counter())
    for i in 1...1000 { counter.tell(.add(i)) }
    let total = try await counter.ask { .get($0) }
    #expect(total == 500500)
    await system.shutdown()
}
