#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// (3) `shutdown` while producers are sending: afterwards handled + dead-lettered == sent, and
/// every ask in flight completed.
extension StressTests {
    struct LoadSink: ActorDefinition {
        enum Message: Sendable {
            case work(Int)
            case question(Int, Reply<Int>)
        }

        let handled: AtomicCounter

        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            handled.increment()
            if case .question(let value, let reply) = message { reply.succeed(value + 1) }
        }
    }

    @Test(.timeLimit(.minutes(20)), arguments: [0, 1, 2])
    func shutdownUnderLoadAccountsForEveryMessage(variant: Int) async {
        let producers = 8
        let actorCount = 24
        let extraAfterShutdown = 2000
        let system = makeTestSystem(name: "shutdown-\(variant)")
        let handled = AtomicCounter()
        // A mix of mailboxes and executors: unbounded, bounded (each policy) and dedicated.
        let actors = (0..<actorCount).map { index -> ActorRef<LoadSink.Message> in
            let options: SpawnOptions =
                switch index % 6 {
                case 1: SpawnOptions(mailbox: .bounded(capacity: 64, overflow: .dropNewest))
                case 2: SpawnOptions(mailbox: .bounded(capacity: 64, overflow: .dropOldest))
                case 3: SpawnOptions(mailbox: .bounded(capacity: 64, overflow: .fail))
                case 4 where variant != 1: SpawnOptions(executor: .dedicatedThread)
                default: .default
                }
            return system.spawn(LoadSink(handled: handled), options: options)
        }
        let board = TallyBoard()
        // Tells made after their sender saw `isShuttingDown`.
        let afterShutdownBoard = TallyBoard()
        let asksSent = AtomicCounter()
        let asksCompleted = AtomicCounter()
        let asksAnswered = AtomicCounter()
        let started = AtomicCounter()

        async let load: Void = TestThreads.run(count: producers) { producer in
            var tally = OutcomeTally()
            var afterShutdownTally = OutcomeTally()
            var random = XorShift(seed: UInt64(producer * 7 + variant + 1))
            var afterShutdown = 0
            var index = 0
            while afterShutdown < extraAfterShutdown {
                let actor = actors[random.below(actorCount)]
                let sawShutdown = system.isShuttingDown
                if producer == 0 && index % 4 == 0 {
                    // One producer mixes in asks (callback style: nothing to await).
                    asksSent.increment()
                    let question = index
                    actor.ask(
                        timeout: .seconds(60), { LoadSink.Message.question(question, $0) },
                        onReply: { result in
                            if case .success(let value) = result, value == question + 1 { asksAnswered.increment() }
                            asksCompleted.increment()
                        })
                } else {
                    let outcome = actor.tell(.work(index))
                    tally.record(outcome)
                    if sawShutdown { afterShutdownTally.record(outcome) }
                }
                index += 1
                if index == 1000 { started.increment() }
                if system.isShuttingDown { afterShutdown += 1 }
                if index % 4096 == 0 && variant == 2 { sched_yield() }
            }
            board.add(tally)
            afterShutdownBoard.add(afterShutdownTally)
        }
        await waitUntil("producers under way") { started.value == producers && handled.value > 10_000 }
        await system.shutdown()
        await load

        let tally = board.tally
        let office = system.deadLetters
        let asks = asksSent.value
        print(
            "shutdown stress \(variant): told \(tally.sent), asked \(asks), handled \(handled.value), dead letters \(office.total) [\(office.summary)]"
        )
        #expect(
            handled.value + office.total == tally.sent + asks,
            "handled \(handled.value) + dead-lettered \(office.total) != sent \(tally.sent + asks); \(office.summary)")
        if handled.value + office.total != tally.sent + asks {
            // A message neither handled nor dead-lettered sits in a stopped actor's mailbox.
            let stuck = actors.indices.filter { !actors[$0].isMailboxEmpty }
            Issue.record(
                "actors still holding undelivered messages (index % 6 == 4: dedicated thread): \(stuck.map { "#\($0) kind \($0 % 6)" })"
            )
        }
        for kind in DeadLetterReason.Kind.allCases {
            #expect(
                office.count(kind) >= tally.deadLettered[kind, default: 0], "refused sends are dead letters (\(kind))")
        }
        // Contract (`ActorSystem.shutdown`): once shutdown has begun, new messages become dead
        // letters with `.systemShutdown`, whether or not their recipient has stopped yet.
        let late = afterShutdownBoard.tally
        #expect(late.sent > 0, "producers kept sending into the shutdown")
        #expect(
            late.deadLettered[.systemShutdown, default: 0] == late.sent,
            "tells after shutdown began: \(late.sent), dead-lettered as .systemShutdown: \(late.deadLettered[.systemShutdown, default: 0]), other outcomes: \(late.deadLettered)"
        )
        await waitUntil("every ask completed (answered or failed)") { asksCompleted.value == asks }
        #expect(asksAnswered.value <= asks)
        #expect(system.liveActorCount == 0)
    }
}
