import Testing
import Troupe
import TroupeTestSupport

@Test func smokeTellAndAsk() async throws {
    let system = ActorSystem()
    let counter = system.spawn(Counter())
    for i in 1...1000 { counter.tell(.add(i)) }
    let total = try await counter.ask { .get($0) }
    #expect(total == 500500)
    await system.shutdown()
}
