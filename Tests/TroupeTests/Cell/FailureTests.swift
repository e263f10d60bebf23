import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Handler failures and the `FailureDecider` directives stop, resume and restart.
@Suite struct FailureTests {
    @Test func defaultDirectiveStopsTheActorAndDeadLettersTheRest() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let events = Recorder<String>()
            let failures = Recorder<String>()
            system.hooks.onActorFailed { failure, directive in
                failures.append("\(failure.actor.id) #\(failure.failureCount) \(failure.error) \(directive)")
            }
            let actor = system.spawn(Fragile(events: events, gate: gate))
            actor.tell(.block)
            await waitUntil("blocked") { gate.entered == 1 }
            actor.tell(.add(1))
            actor.tell(.fail("bad input"))
            actor.tell(.add(2))
            actor.tell(.add(3))
            gate.open()
            _ = await actor.terminated()  // after `stopped` ran (isStopped turns true before it)
            await waitUntil("two dead letters") { system.deadLetters.count(.recipientStopped) == 2 }
            #expect(events.values == ["started 0", "add 1 -> 1", "stopped"])
            #expect(failures.values == ["\(actor.address.id) #1 TestError(bad input) stop"])
        }
    }

    @Test func resumeDropsTheFailingMessageAndKeepsState() async throws {
        try await withTestSystem { system in
            let failures = Recorder<String>()
            system.hooks.onActorFailed { failure, directive in
                failures.append("#\(failure.failureCount) \(directive)")
            }
            let actor = system.spawn(Fragile(), options: SpawnOptions(failureDecider: { _ in .resume }))
            actor.tell(.add(1))
            actor.tell(.fail("one"))
            actor.tell(.add(2))
            actor.tell(.fail("two"))
            actor.tell(.add(3))
            let answer1 = try await actor.ask { Fragile.Message.total($0) }
            #expect(answer1 == 6)
            #expect(failures.values == ["#1 resume", "#2 resume"])
            #expect(!actor.isStopped)
            #expect(
                system.deadLetters.count(.handlerFailed) == 2, "each failing message is a dead letter with its error")
            #expect(system.deadLetters.total == 2)
        }
    }

    @Test func restartMakesAFreshInstanceFromTheFactoryAndKeepsThePendingMailbox() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let events = Recorder<String>()
            let instances = AtomicCounter()
            let actor = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart })) {
                Fragile(events: events, gate: gate, instance: instances.increment())
            }
            actor.tell(.block)
            await waitUntil("blocked") { gate.entered == 1 }
            // All queued while the actor is blocked: the ones after the failure must survive the
            // restart and reach the fresh instance.
            actor.tell(.add(10))
            actor.tell(.fail("crash"))
            actor.tell(.add(1))
            actor.tell(.add(2))
            gate.open()
            let answer2 = try await actor.ask { Fragile.Message.total($0) }
            #expect(answer2 == 3, "fresh state plus the pending messages")
            #expect(instances.value == 2, "factory called at spawn and at the restart")
            #expect(
                events.values == ["started 1", "add 10 -> 10", "started 2", "add 1 -> 1", "add 2 -> 3"],
                "the old instance's `stopped` does not run on restart; the new one's `started` does")
            #expect(system.deadLetters.count(.handlerFailed) == 1, "only the failing message is dead-lettered")
            #expect(system.deadLetters.total == 1)
        }
    }

    @Test func failureCountAccumulatesAcrossRestartsAndTheDeciderCanEscalate() async throws {
        try await withTestSystem { system in
            let decisions = Recorder<FailureDirective>()
            system.hooks.onActorFailed { _, directive in decisions.append(directive) }
            let actor = system.spawn(options: SpawnOptions(failureDecider: { $0.failureCount < 3 ? .restart : .stop }))
            {
                Fragile()
            }
            for round in 0..<3 {
                actor.tell(.fail("round \(round)"))
            }
            await waitUntil("stopped after the third failure") { actor.isStopped }
            #expect(decisions.values == [.restart, .restart, .stop])
        }
    }

    @Test func restartWithoutAFactoryStopsTheActor() async throws {
        let logs = Recorder<LogRecord>()
        try await withTestSystem(logger: recordingLogger(into: logs)) { system in
            let events = Recorder<String>()
            let actor = system.spawn(Fragile(events: events), options: SpawnOptions(failureDecider: { _ in .restart }))
            actor.tell(.fail("no factory"))
            actor.tell(.add(1))
            _ = await actor.terminated()  // after `stopped` ran (isStopped turns true before it)
            await waitUntil("pending message dead-lettered") { system.deadLetters.count(.recipientStopped) == 1 }
            #expect(events.values == ["started 0", "stopped"])
            #expect(logs.values.contains { $0.level == .error && $0.message.contains("without a factory") })
        }
    }

    /// Failures are logged with structured metadata, not interpolated into the message.
    @Test func aFailureIsLoggedWithTheActorTheErrorAndTheCount() async throws {
        let logs = Recorder<LogRecord>()
        try await withTestSystem(logger: recordingLogger(into: logs)) { system in
            let actor = system.spawn(
                Fragile(), options: SpawnOptions(name: "fragile", failureDecider: { _ in .resume }))
            actor.tell(.fail("first"))
            actor.tell(.fail("second"))
            let total = try await actor.ask { Fragile.Message.total($0) }
            #expect(total == 0)
            let failures = logs.values.filter { $0.message == "actor failed; resuming it" }
            #expect(failures.count == 2)
            #expect(failures.allSatisfy { $0.level == .warning })
            #expect(failures.map { $0.metadata["failures"].map { "\($0)" } } == ["1", "2"])
            #expect(failures.allSatisfy { "\($0.metadata["actor"] ?? "")".hasPrefix("fragile#") })
            #expect(
                failures.allSatisfy {
                    "\($0.metadata["error"] ?? "")".contains("first")
                        || "\($0.metadata["error"] ?? "")".contains("second")
                })
            #expect(failures.allSatisfy { $0.metadata["retry"] == "false" })
        }
    }

    @Test func perActorDeciderOverridesTheSystemDecider() async throws {
        try await withTestSystem(failureDecider: { _ in .resume }) { system in
            let systemDecided = system.spawn(Fragile())
            let actorDecided = system.spawn(Fragile(), options: SpawnOptions(failureDecider: { _ in .stop }))
            systemDecided.tell(.fail("x"))
            actorDecided.tell(.fail("x"))
            await waitUntil("per-actor decider stopped its actor") { actorDecided.isStopped }
            let answer3 = try await systemDecided.ask { Fragile.Message.total($0) }
            #expect(answer3 == 0)
            #expect(!systemDecided.isStopped)
        }
    }

    @Test func failureReportsTheActorAndTheError() async throws {
        try await withTestSystem { system in
            let reported = Recorder<ActorFailure>()
            system.hooks.onActorFailed { failure, _ in reported.append(failure) }
            let actor = system.spawn(
                Fragile(), options: SpawnOptions(name: "fragile", failureDecider: { _ in .resume }))
            actor.tell(.fail("details"))
            await waitUntil("failure reported") { reported.count == 1 }
            let failure = reported.values[0]
            #expect(failure.actor == actor.address)
            #expect((failure.error as? TestError) == TestError("details"))
            #expect(failure.failureCount == 1)
            #expect(failure.description.contains("fragile"))
        }
    }

    @Test func failingActorDoesNotDisturbOtherActors() async throws {
        try await withTestSystem { system in
            let healthy = system.spawn(Fragile())
            let doomed = system.spawn(Fragile())
            for value in 1...100 {
                healthy.tell(.add(value))
                if value == 50 { doomed.tell(.fail("x")) }
            }
            let answer4 = try await healthy.ask { Fragile.Message.total($0) }
            #expect(answer4 == 5050)
            await waitUntil("doomed stopped") { doomed.isStopped }
        }
    }
}

// MARK: - Test actor

struct Fragile: ActorDefinition {
    enum Message: Sendable {
        case add(Int)
        case fail(String)
        case total(Reply<Int>)
        case block
    }

    var events: Recorder<String>?
    var gate: Gate?
    var instance = 0
    var sum = 0

    init(events: Recorder<String>? = nil, gate: Gate? = nil, instance: Int = 0) {
        self.events = events
        self.gate = gate
        self.instance = instance
    }

    mutating func started(context: ActorContext<Message>) { events?.append("started \(instance)") }
    mutating func stopped(context: ActorContext<Message>) { events?.append("stopped") }

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .add(let value):
            sum += value
            events?.append("add \(value) -> \(sum)")
        case .fail(let text): throw TestError(text)
        case .total(let reply): reply.succeed(sum)
        case .block: gate?.enter()
        }
    }
}
