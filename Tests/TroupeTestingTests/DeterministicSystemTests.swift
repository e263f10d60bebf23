import Testing
import Troupe
import TroupePubSub
import TroupeTestSupport
import TroupeTesting

/// The deterministic system: schedules chosen by a seed and replayed by it, virtual time, asks.
@Suite struct DeterministicSystemTests {
    /// Records the order in which it hears from senders.
    struct Log: ActorDefinition {
        enum Message: Sendable {
            case heard(String)
            case all(Reply<[String]>)
        }
        var heard: [String] = []
        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .heard(let line): heard.append(line)
            case .all(let reply): reply.succeed(heard)
            }
        }
    }

    /// Tells the log its name `count` times, one message per step.
    struct Talker: ActorDefinition {
        enum Message: Sendable { case talk(Int) }
        let name: String
        let log: ActorRef<Log.Message>
        func receive(_ message: Message, context: ActorContext<Message>) {
            guard case .talk(let left) = message, left > 0 else { return }
            log.tell(.heard(name))
            context.ref.tell(.talk(left - 1))
        }
    }

    func interleaving(seed: UInt64) throws -> [String] {
        let system = DeterministicSystem(seed: seed)
        defer { system.shutdown() }
        let log = system.spawn(Log())
        for name in ["a", "b", "c"] { system.spawn(Talker(name: name, log: log)).tell(.talk(4)) }
        system.runUntilIdle()
        return try system.ask(log) { .all($0) }
    }

    @Test func theSameSeedReplaysTheSameScheduleAndOthersDiffer() throws {
        let first = try interleaving(seed: 7)
        #expect(first.count == 12)
        for _ in 0..<20 { #expect(try interleaving(seed: 7) == first) }
        let others = try (0..<20).map { try interleaving(seed: UInt64(100 + $0)) }
        #expect(Set(others.map { $0.joined() }).count > 1, "different seeds interleave differently")
    }

    @Test func nothingRunsUntilTheTestSteps() throws {
        let system = DeterministicSystem(seed: 1)
        defer { system.shutdown() }
        let counter = system.spawn(Counter())
        counter.tell(.add(5))
        #expect(system.driver.runnableCount == 1)
        #expect(system.trace.isEmpty)
        let step = try #require(system.step())
        #expect(step.actor == counter.address)
        #expect(system.step() == nil, "one message per step: started and add ran in the first")
        #expect(try system.ask(counter) { .get($0) } == 5)
        #expect(system.trace.count == 2)
        #expect("\(system)".hasPrefix("DeterministicSystem(seed: 1)"))
    }

    /// Sends itself a tick every minute, counting them.
    struct Ticker: ActorDefinition {
        enum Message: Sendable {
            case tick
            case count(Reply<Int>)
        }
        var ticks = 0
        mutating func started(context: ActorContext<Message>) {
            context.startPeriodicTimer(key: "tick", message: .tick, every: .seconds(60))
        }
        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .tick: ticks += 1
            case .count(let reply): reply.succeed(ticks)
            }
        }
    }

    @Test func timersFireOnVirtualTimeWithoutRealSleeping() throws {
        let system = DeterministicSystem(seed: 3)
        defer { system.shutdown() }
        let ticker = system.spawn(Ticker())
        let started = ContinuousClock.now
        system.advance(by: .seconds(36_000))
        #expect(try system.ask(ticker) { .count($0) } == 600)
        #expect(system.now == .seconds(36_000))
        #expect(ContinuousClock.now - started < .seconds(120), "ten virtual hours, not real ones")
    }

    /// Keeps every reply it is asked for, unanswered.
    struct Hoarder: ActorDefinition {
        enum Message: Sendable { case hold(Reply<Int>) }
        var kept: [Reply<Int>] = []
        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            if case .hold(let reply) = message { kept.append(reply) }
        }
    }

    @Test func anUnansweredAskTimesOutInVirtualTime() {
        let system = DeterministicSystem(seed: 4)
        defer { system.shutdown() }
        let hoarder = system.spawn(Hoarder())
        let started = ContinuousClock.now
        do {
            _ = try system.ask(hoarder, timeout: .seconds(3_600)) { .hold($0) }
            Issue.record("answered")
        } catch {
            guard case .timedOut(let after) = error else {
                Issue.record("expected a timeout, got \(error)")
                return
            }
            #expect(after == .seconds(3_600))
        }
        #expect(system.now == .seconds(3_600), "the ask's own timeout moved virtual time")
        #expect(ContinuousClock.now - started < .seconds(120), "an hour of virtual time, not a real one")
    }

    @Test func aTenMinuteRestartBackoffRunsInVirtualTime() throws {
        var configuration = ActorSystem.Configuration(name: "backoff")
        configuration.failureDecider = { _ in .restart(after: .seconds(600)) }
        configuration.logger = quietLogger
        let system = DeterministicSystem(seed: 5, configuration: configuration)
        defer { system.shutdown() }
        let restarted = TestLock(0)
        system.system.hooks.onActorRestarted { _, _ in restarted.withLock { $0 += 1 } }
        let fragile = system.spawn(options: SpawnOptions()) { FailOnDemand() }
        fragile.tell(.fail)
        system.runUntilIdle()
        #expect(restarted.withLock { $0 } == 0, "suspended for ten virtual minutes")
        system.advance(by: .seconds(540))
        #expect(restarted.withLock { $0 } == 0)
        system.advance(by: .seconds(60))
        #expect(restarted.withLock { $0 } == 1)
        #expect(try system.ask(fragile) { .ping($0) } == 1)
    }

    @Test func aHeldActorRunsOnlyOnceVirtualTimeReleasesIt() throws {
        let system = DeterministicSystem(seed: 6)
        defer { system.shutdown() }
        let counter = system.spawn(Counter())
        system.runUntilIdle()
        system.hold(counter.address, for: .seconds(5))
        counter.tell(.add(1))
        #expect(system.step() == nil, "held")
        system.advance(by: .seconds(4))
        #expect(system.driver.runnableCount == 1, "still waiting")
        system.advance(by: .seconds(1))
        #expect(system.driver.runnableCount == 0)
        #expect(try system.ask(counter) { .get($0) } == 1)
    }

    @Test func tasksOnTheTaskExecutorRunAsSteps() throws {
        let system = DeterministicSystem(seed: 8)
        defer { system.shutdown() }
        let counter = system.spawn(Counter())
        let result = TestLock<Int?>(nil)
        Task(executorPreference: system.system.taskExecutor) {
            let value = try await counter.ask { .get($0) }
            result.withLock { $0 = value }
        }
        // The task's first job is enqueued when the Task is created; run everything.
        var rounds = 0
        while result.withLock({ $0 }) == nil && rounds < 10_000 {
            if system.step() == nil { usleepMicroseconds(100) }
            rounds += 1
        }
        #expect(result.withLock { $0 } == 0)
        #expect(system.trace.contains { $0.isSwiftJob })
    }
}

func usleepMicroseconds(_ microseconds: Int) {
    let deadline = ContinuousClock.now + .microseconds(microseconds)
    while ContinuousClock.now < deadline {}
}

/// What runs as on the real system: awaited asks from the test, pools, Swift actors on Troupe's
/// serial executors.
@Suite struct DeterministicBehaviourTests {
    @Test func anAwaitedAskFromTheTestRunsTheSystemUntilAnswered() async throws {
        let system = DeterministicSystem(seed: 41)
        let counter = system.spawn(Counter())
        counter.tell(.add(3))
        let total = try await counter.ask { .get($0) }
        #expect(total == 3)
        #expect(system.trace.count == 2)
        system.shutdown()
    }

    @Test func poolsRouteAndAnswer() throws {
        let system = DeterministicSystem(seed: 42)
        defer { system.shutdown() }
        let pool = try system.system.spawnPool(size: 3, routing: .roundRobin) { _ in Counter() }
        for _ in 0..<6 { pool.tell(.add(1)) }
        system.runUntilIdle()
        let totals = pool.members.map { member in (try? system.ask(member) { .get($0) }) ?? -1 }
        #expect(totals == [2, 2, 2])
    }

    actor Tally {
        nonisolated let executor: TroupeSerialExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        var count = 0
        init(executor: TroupeSerialExecutor) { self.executor = executor }
        func bump() -> Int {
            count += 1
            return count
        }
    }

    @Test func swiftActorsOnTroupeExecutorsRunAsSteps() throws {
        let system = DeterministicSystem(seed: 43)
        defer { system.shutdown() }
        let tally = Tally(executor: system.system.makeSerialExecutor())
        let done = TestLock<Int?>(nil)
        Task(executorPreference: system.system.taskExecutor) {
            var last = 0
            for _ in 0..<5 { last = await tally.bump() }
            done.withLock { $0 = last }
        }
        var rounds = 0
        while done.withLock({ $0 }) == nil && rounds < 100_000 {
            if system.step() == nil { usleepMicroseconds(50) }
            rounds += 1
        }
        #expect(done.withLock { $0 } == 5)
        let allJobs = system.trace.allSatisfy { $0.isSwiftJob }
        #expect(allJobs)
    }
}

/// `context.run` continuations and pub/sub on the deterministic system.
@Suite struct DeterministicContinuationTests {
    /// Computes off the actor with `context.run`, then records the result as a message.
    struct Computer: ActorDefinition {
        enum Message: Sendable {
            case compute(Int)
            case computed(Result<Int, any Error>)
            case results(Reply<[Int]>)
        }
        var results: [Int] = []
        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .compute(let n): context.run({ n * n }) { .computed($0) }
            case .computed(let result): if let value = try? result.get() { results.append(value) }
            case .results(let reply): reply.succeed(results)
            }
        }
    }

    @Test func contextRunContinuationsComeBackAsSteps() async throws {
        let system = DeterministicSystem(seed: 51)
        let computer = system.spawn(Computer())
        for n in 1...3 { computer.tell(.compute(n)) }
        // The tasks' jobs are steps too; drive until all three results are in.
        var results: [Int] = []
        for _ in 0..<1_000 where results.count < 3 {
            if system.step() == nil { usleepMicroseconds(50) }
            results = try await computer.ask { .results($0) }
        }
        #expect(results.sorted() == [1, 4, 9])
        #expect(system.trace.contains { $0.isSwiftJob })
        system.shutdown()
    }

    @Test func pubSubDeliversToSubscribersInTheSchedule() throws {
        let system = DeterministicSystem(seed: 52)
        defer { system.shutdown() }
        let pubsub = PubSub(system: system.system)
        let topic = try pubsub.topic("numbers", of: Int.self)
        let first = TestProbe<Int>(in: system, name: "first")
        let second = TestProbe<Int>(in: system, name: "second")
        try topic.subscribe(first.ref)
        try topic.subscribe(second.ref)
        #expect(topic.publish(7) == 2)
        try first.expectMessage(7)
        try second.expectMessage(7)
        try first.expectNoMessage(for: .seconds(1))
    }
}
