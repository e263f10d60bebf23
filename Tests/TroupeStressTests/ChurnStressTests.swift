#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// (2) Actors are spawned and stopped while messages fly at them: every message sent is either
/// handled or dead-lettered, exactly.
extension StressTests {
    enum ChurnMessage: Sendable {
        case work(UInt64)
        case stopSelf
    }

    struct ChurnActor: ActorDefinition {
        let handled: AtomicCounter

        mutating func receive(_ message: ChurnMessage, context: ActorContext<ChurnMessage>) {
            handled.increment()
            if case .stopSelf = message { context.stop() }
        }
    }

    /// The current actors, replaced wholesale by the churner; producers refresh their copy
    /// every few messages, so they keep sending to actors that have just been stopped.
    final class Slots: Sendable {
        private let refs: TestLock<[ActorRef<ChurnMessage>]>
        init(_ refs: [ActorRef<ChurnMessage>]) { self.refs = TestLock(refs) }
        var snapshot: [ActorRef<ChurnMessage>] { refs.withLock { $0 } }
        func replace(_ index: Int, with ref: ActorRef<ChurnMessage>) -> ActorRef<ChurnMessage> {
            refs.withLock { refs in
                let old = refs[index]
                refs[index] = ref
                return old
            }
        }
    }

    /// Runs one churn scenario; every `dedicatedEvery`-th actor gets a dedicated thread.
    func churn(dedicatedEvery: Int?, slotCount: Int = 32, perProducer: Int, rounds: Int, noiseThreads: Int = 0) async {
        let producers = 8
        let system = makeTestSystem(name: "churn")
        let handled = AtomicCounter()
        @Sendable func options(_ round: Int) -> SpawnOptions {
            if let every = dedicatedEvery, round % every == 0 { return SpawnOptions(executor: .dedicatedThread) }
            return .default
        }
        // Every actor ever spawned, with whether it has a dedicated thread (for diagnostics).
        let spawned = Recorder<(ActorRef<ChurnMessage>, dedicated: Bool)>()
        @Sendable func spawnActor(_ index: Int) -> ActorRef<ChurnMessage> {
            let opts = options(index)
            let ref = system.spawn(ChurnActor(handled: handled), options: opts)
            spawned.append((ref, dedicated: opts.executor == .dedicatedThread))
            return ref
        }
        let slots = Slots((0..<slotCount).map { spawnActor($0) })
        let board = TallyBoard()
        let producersDone = Flag()

        // Busy threads oversubscribe the CPUs, so producers get preempted at arbitrary points of
        // the send path (as on a loaded machine).
        async let noise: Void = TestThreads.run(count: noiseThreads) { _ in
            var spin: UInt64 = 0
            while !producersDone.isSet {
                for _ in 0..<10_000 { spin = spin &* 6364136223846793005 &+ 1 }
            }
            if spin == 42 { print("") }  // keep the loop from being optimised away
        }
        async let churner: Void = TestThreads.run(count: 1) { _ in
            var tally = OutcomeTally()
            var random = XorShift(seed: 99)
            for round in 0..<rounds {
                let fresh = spawnActor(round + slotCount)
                let old = slots.replace(random.below(slotCount), with: fresh)
                switch round % 3 {
                case 0: old.stop()
                case 1:
                    // Stops from inside; what is queued behind the stop is dead-lettered (the one
                    // message sent here makes sure the run always covers that path).
                    tally.record(old.tell(.stopSelf))
                    tally.record(old.tell(.work(UInt64(round))))
                default:
                    // Stop right behind a burst of its own messages.
                    for value in 0..<10 { tally.record(old.tell(.work(UInt64(value)))) }
                    old.stop()
                }
                if round % 64 == 0 { sched_yield() }
                if producersDone.isSet && round > rounds / 2 { break }
            }
            board.add(tally)
        }
        await TestThreads.run(count: producers) { producer in
            var tally = OutcomeTally()
            var random = XorShift(seed: UInt64(producer + 1))
            var refs = slots.snapshot
            for index in 0..<perProducer {
                if index & 31 == 0 { refs = slots.snapshot }
                tally.record(refs[random.below(slotCount)].tell(.work(UInt64(index))))
            }
            board.add(tally)
        }
        producersDone.set()
        await churner
        await noise

        // Stop what is left and wait until everything is accounted for, before shutdown...
        for ref in slots.snapshot { ref.stop() }
        let sent = board.tally.sent
        await waitUntil(timeout: StressScale.drainTimeout, "every actor stopped") { system.liveActorCount == 0 }
        // Stopped actors dead-letter what is left in their mailboxes within a turn or two.
        let accounted = await waitUntil(
            timeout: StressScale.isThreadSanitized ? .seconds(150) : .seconds(30),
            "handled (\(handled.value)) + dead letters (\(system.deadLetters.total)) == sent (\(sent)) before shutdown"
        ) {
            handled.value + system.deadLetters.total == sent
        }
        if !accounted {
            // A message neither handled nor dead-lettered sits in a stopped actor's mailbox.
            let stuck = spawned.values.filter { $0.0.isStopped && !$0.0.isMailboxEmpty }
            Issue.record(
                """
                \(stuck.count) stopped actors still hold undelivered messages \
                (\(stuck.filter { $0.dedicated }.count) of them with a dedicated thread, \
                \(spawned.values.filter { $0.dedicated }.count) dedicated of \(spawned.count) spawned)
                """)
        }
        // ...and after it (nothing may appear twice).
        await system.shutdown()
        let tally = board.tally
        let office = system.deadLetters
        print(
            "churn stress (\(slotCount) slots, dedicated every \(dedicatedEvery.map(String.init) ?? "never")): sent \(tally.sent), handled \(handled.value), dead letters \(office.total) [\(office.summary)], refused at send \(tally.deadLetteredTotal)"
        )
        #expect(
            handled.value + office.total == tally.sent,
            "handled \(handled.value) + dead-lettered \(office.total) != sent \(tally.sent); \(office.summary)")
        for kind in DeadLetterReason.Kind.allCases {
            #expect(
                office.count(kind) >= tally.deadLettered[kind, default: 0],
                "every refused send is counted as a dead letter (\(kind))")
        }
        #expect(office.count(.recipientStopped) > 0, "messages behind a stop were dead-lettered")
        #expect(handled.value > 0)
    }

    @Test(.timeLimit(.minutes(20)))
    func actorChurnWhileMessagesFlyAccountsForEveryMessage() async {
        await churn(
            dedicatedEvery: nil, perProducer: StressScale.scaled(150_000, minimum: 1000),
            rounds: StressScale.scaled(3000, minimum: 50))
    }

    @Test(.timeLimit(.minutes(20)))
    func dedicatedThreadActorChurnAccountsForEveryMessage() async {
        await churn(
            dedicatedEvery: 2, perProducer: StressScale.scaled(150_000, minimum: 1000),
            rounds: StressScale.scaled(400, minimum: 50), noiseThreads: 4)
    }

    /// Few actors, all with a dedicated thread, stopped and replaced as fast as possible: the
    /// producers' sends race the stop (and thread exit) of the actor they target.
    @Test(.timeLimit(.minutes(20)))
    func sendsRacingTheStopOfDedicatedActorsAreNeverLost() async {
        await churn(
            dedicatedEvery: 1, slotCount: 4, perProducer: StressScale.scaled(150_000, minimum: 1000),
            rounds: StressScale.scaled(4000, minimum: 50), noiseThreads: 4)
    }
}
