import Testing
import Troupe
import TroupeTestSupport

/// (7) Wake-ups under load: two actors whose handlers block must get the two workers, however
/// the sends interleave with the workers' polling and parking. A lost wake-up leaves the
/// second actor queued behind the first one's blocked worker while the other worker sleeps.
extension StressTests {
    struct Holder: ActorDefinition {
        let gate: Gate?
        enum Message: Sendable { case hold }
        func receive(_ message: Message, context: ActorContext<Message>) { _ = gate?.enter() }
    }

    /// Blocking actors on as many workers (2 of 2, 3 of 4). Each round lets every worker park,
    /// wakes exactly one with a no-op message so that it polls, and sends the blocking messages
    /// inside its 20 µs polling window: their senders skip the futex wake-up, and the wake-ups
    /// must be passed on from worker to worker until every blocking actor has one.
    @Test(arguments: [(workers: 2, holders: 2), (workers: 4, holders: 3)])
    func blockingActorsNeverWaitBehindASleepingWorker(_ shape: (workers: Int, holders: Int)) async throws {
        let rounds = StressScale.scaled(2_000, minimum: 200)
        var stalls = 0
        for _ in 0..<rounds {
            let system = makeTestSystem(workers: shape.workers)
            let gate = Gate()
            let holders = (0..<shape.holders).map { _ in system.spawn(Holder(gate: gate)) }
            let waker = system.spawn(Holder(gate: nil))
            try await Task.sleep(for: .milliseconds(1))  // every worker parks
            waker.tell(.hold)  // one worker wakes, runs it, polls
            let sendAt = ContinuousClock.now + .microseconds(Int.random(in: 0...30))
            while ContinuousClock.now < sendAt {}
            for holder in holders { holder.tell(.hold) }
            // A healthy run takes microseconds; two seconds means a worker slept through it.
            let deadline = ContinuousClock.now + .seconds(2)
            while gate.entered < shape.holders && ContinuousClock.now < deadline { await Task.yield() }
            if gate.entered < shape.holders { stalls += 1 }
            gate.open()
            await system.shutdown()
        }
        #expect(stalls == 0, "\(stalls) of \(rounds) rounds left a blocking actor waiting for a parked worker")
    }
}
