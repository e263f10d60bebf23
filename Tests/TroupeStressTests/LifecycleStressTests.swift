#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// (6) The core's lifecycle under load: a crash storm with restarts (immediate, retried,
/// requested from outside), 10^5 timers, death watch and self-invalidation churn. Every
/// message sent is accounted for: handled, or dead-lettered with its reason.
extension StressTests {
    enum StormMessage: Sendable {
        /// A value to add; fails the handler when `fails` (the value still counts once).
        case value(UInt64, fails: Bool)
        case total(Reply<UInt64>)
    }

    /// Sums what it handles into shared counters (the instance is replaced on every restart).
    /// With `attempted`, a failing value fails only on its first attempt.
    struct StormActor: ActorDefinition {
        let handledSum: AtomicCounter
        let handledCount: AtomicCounter
        var attempted: TestLock<Set<UInt64>>?

        mutating func receive(_ message: StormMessage, context: ActorContext<StormMessage>) throws {
            switch message {
            case .value(let value, let fails):
                if fails {
                    let first = attempted?.withLock { $0.insert(value).inserted } ?? true
                    if first { throw TestError("storm \(value)") }
                }
                handledSum.increment(by: Int(value))
                handledCount.increment()
            case .total(let reply):
                reply.succeed(UInt64(handledSum.value))
            }
        }
    }

    /// Sums dead-lettered `.value` payloads by reason.
    final class DeadLetterSums: Sendable {
        let failedSum = AtomicCounter()
        let failedCount = AtomicCounter()
        let otherCount = AtomicCounter()

        func observe(_ system: ActorSystem) {
            system.deadLetters.observe { [self] letter in
                guard case .value(let value, _) = letter.message as? StormMessage else {
                    otherCount.increment()
                    return
                }
                if case .handlerFailed = letter.reason {
                    failedSum.increment(by: Int(value))
                    failedCount.increment()
                } else {
                    otherCount.increment()
                }
            }
        }
    }

    /// Producers send values to restartable actors; every `failEvery`-th value fails. With
    /// `.deadLetter` the handled and dead-lettered sums add up to the sent sum; with
    /// `.retryOnce` (values fail only on their first attempt) everything is handled.
    func crashStorm(failures: Int, failEvery: Int, retry: Bool, requestRestarts: Bool) async throws {
        let producers = 4, actorCount = 8
        let perProducer = failures * failEvery / producers
        let system = makeTestSystem(name: "storm")
        let handledSum = AtomicCounter(), handledCount = AtomicCounter(), restarts = AtomicCounter()
        let deadLetters = DeadLetterSums()
        deadLetters.observe(system)
        system.hooks.onActorRestarted { _, _ in restarts.increment() }
        let attempted: TestLock<Set<UInt64>>? = retry ? TestLock([]) : nil
        let directive: FailureDirective = retry ? .restart(failingMessage: .retryOnce) : .restart
        let actors = (0..<actorCount).map { _ in
            system.spawn(options: SpawnOptions(failureDecider: { _ in directive })) {
                StormActor(handledSum: handledSum, handledCount: handledCount, attempted: attempted)
            }
        }
        let sentSum = AtomicCounter()
        let requesterDone = Atomic<Bool>(false)
        let requester: pthread_t? =
            requestRestarts
            ? TestThreads.start {
                var random = XorShift(seed: 99)
                while !requesterDone.load(ordering: .acquiring) {
                    actors[random.below(actors.count)].requestRestart(reason: TestError("requested"))
                    for _ in 0..<200 { _ = random.next() }
                }
            } : nil
        await TestThreads.run(count: producers) { producer in
            var random = XorShift(seed: UInt64(producer + 1))
            var localSum = 0
            for index in 0..<perProducer {
                let value = UInt64(producer * perProducer + index + 1)
                let fails = index % failEvery == failEvery - 1
                actors[random.below(actors.count)].tell(.value(value, fails: fails))
                localSum += Int(value)
            }
            sentSum.increment(by: localSum)
        }
        requesterDone.store(true, ordering: .releasing)
        if let requester { TestThreads.join(requester) }
        let expectedFailures = producers * (perProducer / failEvery)
        let sent = sentSum.value
        let accounted = await waitUntil(timeout: StressScale.drainTimeout, "every value handled or dead-lettered") {
            handledSum.value + deadLetters.failedSum.value == sent
        }
        await system.shutdown()
        #expect(accounted)
        #expect(deadLetters.otherCount.value == 0, "no value lost to another reason")
        if retry {
            #expect(deadLetters.failedCount.value == 0, "every failing value succeeded on its retry")
            #expect(handledCount.value == producers * perProducer)
        } else {
            #expect(deadLetters.failedCount.value == expectedFailures)
            #expect(handledCount.value == producers * perProducer - expectedFailures)
        }
        #expect(restarts.value >= expectedFailures, "one restart per failure (plus requested ones)")
        print(
            "crash storm: \(expectedFailures) failures, \(restarts.value) restarts, retry=\(retry), requested=\(requestRestarts), sent=\(producers * perProducer)"
        )
    }

    /// 10^5 failures at least, also under TSan (issue 7's figure); `TROUPE_STRESS_SCALE` > 1 raises it.
    static var stormFailures: Int { max(100_000, StressScale.scaled(100_000)) }

    @Test func crashStormWithRestartsLosesNoMessage() async throws {
        try await crashStorm(failures: Self.stormFailures, failEvery: 10, retry: false, requestRestarts: false)
    }

    @Test func crashStormWithRetriesAndRequestedRestartsHandlesEveryMessage() async throws {
        try await crashStorm(failures: Self.stormFailures, failEvery: 10, retry: true, requestRestarts: true)
    }

    enum TimerStormMessage: Sendable {
        case arm(first: Int, count: Int, maxDelayMicroseconds: Int)
        case fired(Int)
        case armPeriodicAndCancel(Int)
    }

    struct TimerStormActor: ActorDefinition {
        let fired: AtomicCounter
        let firedSum: AtomicCounter

        func receive(_ message: TimerStormMessage, context: ActorContext<TimerStormMessage>) {
            switch message {
            case .arm(let first, let count, let maxDelay):
                var random = XorShift(seed: UInt64(first + 1))
                for key in first..<(first + count) {
                    context.startSingleTimer(
                        key: key, message: .fired(key), after: .microseconds(random.below(maxDelay)))
                }
            case .fired(let key):
                fired.increment()
                firedSum.increment(by: key)
            case .armPeriodicAndCancel(let key):
                context.startPeriodicTimer(key: -key - 1, message: .fired(-1_000_000_000), every: .microseconds(50))
                context.cancelTimer(key: -key - 1)
            }
        }
    }

    @Test func aHundredThousandTimersFireExactlyOnce() async throws {
        let total = max(100_000, StressScale.scaled(100_000))  // 10^5 at least, also under TSan
        let actorCount = 100
        let perActor = total / actorCount
        let system = makeTestSystem(name: "timers")
        let fired = AtomicCounter(), firedSum = AtomicCounter()
        let actors = (0..<actorCount).map { _ in system.spawn(TimerStormActor(fired: fired, firedSum: firedSum)) }
        for (index, actor) in actors.enumerated() {
            // Cancelled periodic timers interleave with the real ones and must never fire.
            for extra in 0..<10 { actor.tell(.armPeriodicAndCancel(index * 10 + extra)) }
            actor.tell(.arm(first: index * perActor, count: perActor, maxDelayMicroseconds: 500_000))
        }
        let expected = actorCount * perActor
        let expectedSum = (0..<expected).reduce(0, +)
        let done = await waitUntil(timeout: StressScale.drainTimeout, "all timers fired") { fired.value == expected }
        // Anything cancelled or duplicated would show up by now or in the sum.
        try await Task.sleep(for: .milliseconds(50))
        await system.shutdown()
        #expect(done)
        #expect(fired.value == expected)
        #expect(firedSum.value == expectedSum)
        print("timer storm: \(expected) timers fired once each")
    }

    struct Bystander: ActorDefinition {
        let notices: AtomicCounter
        enum Message: Sendable {
            case watch([ActorRef<StormMessage>], Reply<Void>)
            case terminated(Terminated)
        }
        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .watch(let targets, let reply):
                for target in targets { context.watch(target) { .terminated($0) } }
                reply.succeed()
            case .terminated:
                notices.increment()
            }
        }
    }

    @Test func deathWatchAndSelfInvalidationChurn() async throws {
        let rounds = StressScale.scaled(50, minimum: 5)
        let system = makeTestSystem(name: "watch-churn")
        let notices = AtomicCounter(), callbacks = AtomicCounter()
        let handledSum = AtomicCounter(), handledCount = AtomicCounter()
        let watchers = (0..<8).map { _ in system.spawn(Bystander(notices: notices)) }
        var expectedNotices = 0
        for _ in 0..<rounds {
            let targets = (0..<50).map { _ in
                system.spawn(StormActor(handledSum: handledSum, handledCount: handledCount))
            }
            for target in targets { target.whenTerminated { _ in callbacks.increment() } }
            // Half the watchers watch before the targets stop, half race with the stopping.
            for watcher in watchers.prefix(4) { _ = try await watcher.ask { Bystander.Message.watch(targets, $0) } }
            await TestThreads.run(count: 2) { half in
                if half == 0 {
                    for target in targets { target.stop() }
                } else {
                    for watcher in watchers.suffix(4) {
                        watcher.ask({ Bystander.Message.watch(targets, $0) }, onReply: { _ in })
                    }
                }
            }
            expectedNotices += targets.count * watchers.count
            // Self-invalidating actors: sent to, then forgotten.
            for value in 0..<20 {
                let ref = system.spawn(
                    StormActor(handledSum: handledSum, handledCount: handledCount),
                    options: SpawnOptions(selfInvalidating: true))
                ref.tell(.value(UInt64(value), fails: false))
            }
        }
        let told = await waitUntil(timeout: StressScale.drainTimeout, "every watcher told once per target") {
            notices.value == expectedNotices && callbacks.value == rounds * 50
        }
        let invalidated = await waitUntil(timeout: StressScale.drainTimeout, "self-invalidating actors gone") {
            system.liveActorCount == watchers.count && handledCount.value == rounds * 20
        }
        await system.shutdown()
        #expect(told && invalidated)
        #expect(notices.value == expectedNotices, "exactly once per watcher and target")
        #expect(system.deadLetters.total == 0)
    }
}

struct TestError: Error, Equatable, Sendable, CustomStringConvertible {
    let text: String
    init(_ text: String) { self.text = text }
    var description: String { "TestError(\(text))" }
}
