#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// A cell that a handler makes runnable goes into its worker's next-slot. When that handler
/// then runs long, an idle worker must take the cell: it may not wait for the handler to end.
/// (Before the slot was stealable, the woken actor waited out the whole handler.)
@Suite struct NextSlotTests {
    @Test(arguments: [false, true])
    func aCellMadeRunnableByALongHandlerRunsOnTheIdleWorker(sleeping: Bool) async throws {
        try await withTestSystem(workers: 2) { system in
            let handled = RoundMark()
            let ranMeanwhile = Recorder<Bool>()
            let woken = system.spawn(CountingActor(counter: handled))
            let waker = system.spawn(WakerActor(handled: handled, ranMeanwhile: ranMeanwhile))
            let rounds = 20
            for round in 1...rounds {
                // Let the other worker finish polling and park, the harder case: it must be woken.
                try await Task.sleep(for: .milliseconds(round % 2 == 0 ? 5 : 0))
                waker.tell(.wake(woken, round: round, sleep: sleeping))
                await waitUntil("round \(round) finished") { ranMeanwhile.count == round }
            }
            #expect(
                ranMeanwhile.values == Array(repeating: true, count: rounds),
                "the woken actor waited for the long handler that woke it to end")
        }
    }
}

final class RoundMark: Sendable {
    let value = Atomic<Int>(0)
}

struct CountingActor: ActorDefinition {
    let counter: RoundMark
    func receive(_ message: Int, context: ActorContext<Int>) {
        counter.value.store(message, ordering: .sequentiallyConsistent)
    }
}

/// Tells `woken` the round number, then stays in the handler (spinning, or sleeping in 100 µs
/// steps) until `woken` handled it, for at most 2 s.
struct WakerActor: ActorDefinition {
    enum Message: Sendable { case wake(ActorRef<Int>, round: Int, sleep: Bool) }
    let handled: RoundMark
    let ranMeanwhile: Recorder<Bool>

    func receive(_ message: Message, context: ActorContext<Message>) {
        guard case .wake(let woken, let round, let sleep) = message else { return }
        woken.tell(round)
        let deadline = ContinuousClock.now + .seconds(2)
        var ran = false
        while ContinuousClock.now < deadline {
            if handled.value.load(ordering: .sequentiallyConsistent) == round { ran = true; break }
            if sleep { usleep(100) }
        }
        ranMeanwhile.append(ran)
    }
}
