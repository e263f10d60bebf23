import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Restarts: crash, restart hooks, delayed restarts that keep the mailbox, retrying the failing
/// message, restarts requested from outside.
@Suite struct RestartTests {
    @Test func crashFailsTheActorLikeAThrowAfterTheHandlerReturns() async throws {
        try await withTestSystem { system in
            let failures = Recorder<String>()
            system.hooks.onActorFailed { failure, directive in failures.append("\(failure.error) \(directive)") }
            let actor = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart })) { Phoenix() }
            actor.tell(.add(5))
            actor.tell(.crash("disk full"))
            actor.tell(.add(1))
            let total = try await actor.ask { Phoenix.Message.total($0) }
            #expect(total == 1, "the handler finished (+100), then the crash restarted the actor with fresh state")
            #expect(failures.values == ["TestError(disk full) restart"])
            #expect(system.deadLetters.count(.handlerFailed) == 1)
        }
    }

    @Test func restartHooksRunInOrderOnTheOldAndTheNewInstance() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let restarts = Recorder<String>()
            system.hooks.onActorRestarted { _, reason in restarts.append("\(reason)") }
            let generation = AtomicCounter()
            let actor = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart })) {
                Phoenix(events: events, generation: generation.increment())
            }
            actor.tell(.fail("boom"))
            _ = try await actor.ask { Phoenix.Message.total($0) }
            actor.stop()
            // `terminated()` resolves after the `stopped` hook ran (`isStopped` turns true as
            // the stop begins, before the hook).
            _ = await actor.terminated()
            #expect(
                events.values == [
                    "started 1", "willRestart 1 TestError(boom)", "didRestart 2 TestError(boom)", "stopped 2",
                ])
            #expect(restarts.values == ["TestError(boom)"])
        }
    }

    @Test func delayedRestartSuspendsTheActorAndKeepsEveryPendingMessage() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let events = Recorder<String>()
            let generation = AtomicCounter()
            let delay = Duration.milliseconds(200)
            let actor = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart(after: delay) })) {
                Phoenix(events: events, gate: gate, generation: generation.increment())
            }
            actor.tell(.block)
            await waitUntil("blocked") { gate.entered == 1 }
            // Queued behind the failure, in the same batch: the fresh instance must get them all.
            actor.tell(.fail("slow down"))
            for value in 1...10 { actor.tell(.add(value)) }
            let failedAt = ContinuousClock.now
            gate.open()
            let total = try await actor.ask { Phoenix.Message.total($0) }
            let restartedAfter = ContinuousClock.now - failedAt
            #expect(total == 55)
            #expect(generation.value == 2)
            #expect(restartedAfter >= delay, "the fresh instance started only after the delay (\(restartedAfter))")
            #expect(events.values.filter { $0.hasPrefix("add") }.count == 10)
            #expect(
                events.values.firstIndex(of: "didRestart 2 TestError(slow down)")! < events.values.firstIndex(
                    of: "add 1 -> 1")!)
        }
    }

    @Test func retryOnceHandsTheFailingMessageToTheFreshInstance() async throws {
        try await withTestSystem { system in
            let generation = AtomicCounter()
            let actor = system.spawn(
                options: SpawnOptions(failureDecider: { _ in .restart(failingMessage: .retryOnce) })
            ) {
                Phoenix(generation: generation.increment())
            }
            actor.tell(.add(1))
            actor.tell(.failOnFirstGeneration(10))
            actor.tell(.add(100))
            let total = try await actor.ask { Phoenix.Message.total($0) }
            #expect(total == 110, "the retried message was handled by generation 2, then the next one")
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func aRetryThatFailsAgainIsDeadLetteredAndTheAskerLearnsTheError() async throws {
        try await withTestSystem { system in
            let failures = Recorder<Bool>()
            system.hooks.onActorFailed { failure, _ in failures.append(failure.wasRetry) }
            let actor = system.spawn(
                options: SpawnOptions(failureDecider: { _ in .restart(failingMessage: .retryOnce) })
            ) {
                Phoenix()
            }
            do {
                _ = try await actor.ask { Phoenix.Message.failingAsk("always", $0) }
                Issue.record("the ask should have failed")
            } catch {
                guard case AskError.failed(let cause)? = error as? AskError else {
                    Issue.record("unexpected \(error)"); return
                }
                #expect((cause as? TestError) == TestError("always"))
            }
            #expect(failures.values == [false, true], "tried twice: once, then once more as a retry")
            #expect(system.deadLetters.count(.handlerFailed) == 1)
            #expect(!actor.isStopped)
        }
    }

    @Test func requestedRestartTakesPriorityOverQueuedMessages() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let events = Recorder<String>()
            let generation = AtomicCounter()
            let actor = system.spawn(options: SpawnOptions()) {
                Phoenix(events: events, gate: gate, generation: generation.increment())
            }
            actor.tell(.add(7))
            actor.tell(.block)
            await waitUntil("blocked") { gate.entered == 1 }
            actor.tell(.add(1))
            actor.tell(.add(2))
            #expect(actor.requestRestart(reason: TestError("reconfigure")))
            gate.open()
            let total = try await actor.ask { Phoenix.Message.total($0) }
            #expect(total == 3, "queued messages were handled by the fresh instance")
            #expect(
                events.values == [
                    "started 1", "add 7 -> 7", "willRestart 1 TestError(reconfigure)",
                    "didRestart 2 TestError(reconfigure)", "add 1 -> 1", "add 2 -> 3",
                ])
        }
    }

    @Test func aDelayedRestartRequestSuspendsTheActorFirstAndKeepsItsMessages() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let events = Recorder<String>()
            let generation = AtomicCounter()
            let actor = system.spawn(options: .default) {
                Phoenix(events: events, gate: gate, generation: generation.increment())
            }
            actor.tell(.block)
            await waitUntil("blocked") { gate.entered == 1 }
            for value in 1...3 { actor.tell(.add(value)) }
            let delay = Duration.milliseconds(100)
            let requestedAt = ContinuousClock.now
            #expect(actor.requestRestart(reason: TestError("later"), after: delay))
            gate.open()
            let total = try await actor.ask { Phoenix.Message.total($0) }
            #expect(ContinuousClock.now - requestedAt >= delay)
            #expect(total == 6, "the fresh instance handled every queued message")
            #expect(
                events.values == [
                    "started 1", "willRestart 1 TestError(later)", "didRestart 2 TestError(later)",
                    "add 1 -> 1", "add 2 -> 3", "add 3 -> 6",
                ])
        }
    }

    @Test func restartRequestsAreRefusedForActorsThatCannotRestart() async throws {
        try await withTestSystem { system in
            let fromInstance = system.spawn(Phoenix())
            #expect(!fromInstance.isRestartable)
            #expect(!fromInstance.requestRestart())
            let fromFactory = system.spawn(options: .default) { Phoenix() }
            #expect(fromFactory.isRestartable)
            fromFactory.stop()
            await waitUntil("stopped") { fromFactory.isStopped }
            #expect(!fromFactory.requestRestart())
        }
    }

    @Test func shutdownCutsARestartDelayShortAndLosesNothing() async throws {
        let system = makeTestSystem()
        let actor = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart(after: .seconds(3600)) })) {
            Phoenix()
        }
        actor.tell(.fail("pause for an hour"))
        for value in 1...5 { actor.tell(.add(value)) }
        let started = ContinuousClock.now
        await system.shutdown()
        #expect(ContinuousClock.now - started < .seconds(600), "shutdown did not wait for the hour-long delay")
        #expect(actor.isStopped)
        #expect(system.deadLetters.count(.handlerFailed) == 1)
    }

    @Test func stopDuringARestartDelayTakesEffectWhenTheActorResumes() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let actor = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart(after: .milliseconds(50)) }))
            {
                Phoenix(events: events)
            }
            actor.tell(.fail("x"))
            actor.tell(.add(1))
            actor.stop()
            actor.tell(.add(2))
            let terminated = await actor.terminated()
            #expect(events.values.contains("add 1 -> 1"))
            #expect(!events.values.contains("add 2 -> 3"))
            #expect("\(terminated.reason)" == "stopped")
        }
    }
}

/// A restartable test actor that records its lifecycle.
struct Phoenix: ActorDefinition {
    enum Message: Sendable {
        case add(Int)
        case fail(String)
        case crash(String)
        case failOnFirstGeneration(Int)
        case failingAsk(String, Reply<Int>)
        case total(Reply<Int>)
        case block
    }

    var events: Recorder<String>?
    var gate: Gate?
    var generation: Int
    var sum = 0

    init(events: Recorder<String>? = nil, gate: Gate? = nil, generation: Int = 1) {
        self.events = events
        self.gate = gate
        self.generation = generation
    }

    mutating func started(context: ActorContext<Message>) { events?.append("started \(generation)") }
    mutating func stopped(context: ActorContext<Message>) { events?.append("stopped \(generation)") }
    mutating func willRestart(reason: any Error, context: ActorContext<Message>) {
        events?.append("willRestart \(generation) \(reason)")
    }
    mutating func didRestart(reason: any Error, context: ActorContext<Message>) {
        events?.append("didRestart \(generation) \(reason)")
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .add(let value):
            sum += value
            events?.append("add \(value) -> \(sum)")
        case .fail(let text):
            throw TestError(text)
        case .crash(let text):
            sum += 100
            context.crash(TestError(text))
        case .failOnFirstGeneration(let value):
            if generation == 1 { throw TestError("first generation") }
            sum += value
        case .failingAsk(let text, _):
            throw TestError(text)
        case .total(let reply):
            reply.succeed(sum)
        case .block:
            gate?.enter()
        }
    }
}
