import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// (5) The scheduler under many producers and many small turns: 8 producer threads tell 64
/// actors round-robin with batch sizes from 1 upwards, on pinned workers. Every message must
/// be handled: a lost wake-up (an actor with mail that is never run, or a queued actor while
/// every worker sleeps) shows up as a total that stops growing.
extension StressTests {
    final class Tally: Sendable {
        let total = Atomic<Int>(0)
    }

    enum CountingMessage: Sendable {
        case one
        case count(Reply<Int>)
    }

    struct Counting: ActorDefinition {
        let tally: Tally
        var handled = 0
        mutating func receive(_ message: CountingMessage, context: ActorContext<CountingMessage>) {
            switch message {
            case .one:
                handled += 1
                tally.total.add(1, ordering: .relaxed)
            case .count(let reply):
                reply.succeed(handled)
            }
        }
    }

    @Test(.timeLimit(.minutes(10)), arguments: [1, 8, 64])
    func manyProducersManyActorsEveryMessageRuns(batchSize: Int) async throws {
        let producers = 8, actorCount = 64
        let perProducer = StressScale.scaled(250_000)
        let system = ActorSystem(
            configuration: .init(
                name: "sched", workerCount: 2, pinWorkers: true,
                batchSize: batchSize, logger: quietLogger))
        let tally = Tally()
        let actors = (0..<actorCount).map { _ in system.spawn(Counting(tally: tally)) }
        await TestThreads.run(count: producers) { producer in
            for i in 0..<perProducer { actors[(i &+ producer) % actorCount].tell(.one) }
        }
        let expected = producers * perProducer
        let finished = await waitUntil(timeout: .seconds(60), "all \(expected) messages handled") {
            tally.total.load(ordering: .relaxed) == expected
        }
        if !finished {
            // Name the actors that are stuck: their asks time out.
            for (index, actor) in actors.enumerated() {
                do {
                    _ = try await actor.ask(timeout: .seconds(1)) { .count($0) }
                } catch {
                    Issue.record("actor \(index) does not run: \(error); mailbox empty: \(actor.isMailboxEmpty)")
                }
            }
        }
        #expect(tally.total.load(ordering: .relaxed) == expected)
        await system.shutdown()
    }
}
