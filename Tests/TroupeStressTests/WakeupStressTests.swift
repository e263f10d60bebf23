import Testing
import Troupe
import TroupeTestSupport

/// (7) Wake-ups under load: two actors whose handlers block must get the two workers, however
/// the sends interleave with the workers' polling and parking. A lost wake-up leaves the
/// second actor queued behind the first one's blocked worker while the other worker sleeps.
extension StressTests {
    struct Holder: ActorDefinition {
        let gate: Gate
        enum Message: Sendable { case hold }
        func receive(_ message: Message, context: ActorContext<Message>) { gate.enter() }
    }

    @Test func blockingActorsNeverWaitBehindASleepingWorker() async throws {
        let rounds = StressScale.scaled(2_000, minimum: 200)
        var stalls = 0
        for _ in 0..<rounds {
            let system = makeTestSystem(workers: 2)
            let gate = Gate()
            let holders = (0..<2).map { _ in system.spawn(Holder(gate: gate)) }
            // Land the sends anywhere in the workers' poll-then-park cycle (20 µs of polling).
            try await Task.sleep(for: .microseconds(Int.random(in: 0...40)))
            for holder in holders { holder.tell(.hold) }
            // A healthy run takes microseconds; two seconds means a worker slept through it.
            let deadline = ContinuousClock.now + .seconds(2)
            while gate.entered < 2 && ContinuousClock.now < deadline { await Task.yield() }
            if gate.entered < 2 { stalls += 1 }
            gate.open()
            await system.shutdown()
        }
        #expect(stalls == 0, "\(stalls) of \(rounds) rounds left a blocking actor waiting for a parked worker")
    }
}
