import Testing
import Troupe
import TroupeTestSupport

/// `system.snapshot()`: what it says about actors, workers, job lanes and latencies.
@Suite struct SnapshotTests {
    struct Blocker: ActorDefinition {
        enum Message: Sendable {
            case block(Gate)
            case nothing
            case ping(Reply<Int>)
        }
        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .block(let gate): gate.enter()
            case .nothing: break
            case .ping(let reply): reply.succeed(1)
            }
        }
    }

    struct Greeter: HandlerActor {
        struct Hello: Sendable {}
        func setup(_ on: inout MessageHandlers<Greeter>) {
            on.result(Hello.self) { _, _, _ in "hi" }
        }
    }

    @Test func listsLiveActorsWithNamesTypesAndCounters() async throws {
        try await withTestSystem(failureDecider: { _ in .restart }) { system in
            let counter = system.spawn(Counter(), options: SpawnOptions(name: "counter"))
            let greeter = system.spawn(Greeter())
            let flaky = system.spawn(options: SpawnOptions(name: "flaky")) { FailOnDemand() }
            for _ in 0..<10 { counter.tell(.add(1)) }
            #expect(try await counter.ask { .get($0) } == 10)
            let hello: String = try await greeter.ask(Greeter.Hello())
            #expect(hello == "hi")
            flaky.tell(.fail)
            flaky.tell(.fail)
            #expect(try await flaky.ask { .ping($0) } == 1)

            let snapshot = system.snapshot()
            #expect(snapshot.systemName == "test")
            #expect(snapshot.actors.count == 3)
            let counterSeen = try #require(snapshot.actors.first { $0.address == counter.address })
            #expect(counterSeen.name == "counter")
            #expect(counterSeen.definitionType.hasSuffix("Counter"))
            #expect(counterSeen.messageType.hasSuffix("Counter.Message"))
            #expect(counterSeen.messagesProcessed >= 11, "10 tells and the ask (and the start)")
            #expect(counterSeen.failures == 0)
            #expect(counterSeen.state == .idle || counterSeen.state == .scheduled)
            #expect(!counterSeen.hasPendingMessages)
            #expect(counterSeen.mailboxDepth == nil, "not counted by default")
            #expect(counterSeen.handlerDuration == nil, "per-actor histograms are off by default")

            let greeterSeen = try #require(snapshot.actors.first { $0.address == greeter.address })
            #expect(greeterSeen.definitionType.hasSuffix("Greeter"), "a handler actor is named by its own type")
            #expect(greeterSeen.messageType.hasSuffix("AnyMessage"))

            let flakySeen = try #require(snapshot.actors.first { $0.address == flaky.address })
            #expect(flakySeen.failures == 2)
            #expect(flakySeen.restarts == 2)
            #expect(snapshot.workers.count == 2)
            #expect(snapshot.workers.allSatisfy { !$0.isDedicated })
            #expect("\(snapshot)".contains("counter#\(counter.address.id)"))
        }
    }

    @Test func showsWhichActorAWorkerRunsAndTheMailboxBehindIt() async throws {
        try await withTestSystem(introspection: .init(tracksMailboxDepths: true)) { system in
            let blocker = system.spawn(Blocker(), options: SpawnOptions(name: "blocker"))
            let gate = Gate()
            blocker.tell(.block(gate))
            await waitUntil { gate.entered == 1 }
            for _ in 0..<5 { blocker.tell(.nothing) }
            let snapshot = system.snapshot()
            gate.open()
            let seen = try #require(snapshot.actors.first { $0.address == blocker.address })
            #expect(seen.state == .running)
            #expect(seen.mailboxDepth == 5)
            #expect(seen.hasPendingMessages)
            let worker = try #require(snapshot.workers.first { $0.running?.actor == blocker.address })
            #expect(worker.running?.messageType.hasSuffix("Blocker.Message") == true)
            #expect(worker.running?.isSwiftJob == false)
            #expect(snapshot.workers.filter { $0.running != nil }.count == 1)
            #expect(try await blocker.ask { .ping($0) } == 1)
            await waitUntil { system.snapshot().actors.first?.mailboxDepth == 0 }
        }
    }

    @Test func aSuspendedActorIsShownAsSuch() async throws {
        try await withTestSystem(failureDecider: { _ in .restart(after: .seconds(30)) }) { system in
            let flaky = system.spawn(options: SpawnOptions()) { FailOnDemand() }
            flaky.tell(.fail)
            await waitUntil { system.snapshot().actors.first?.state == .suspended }
        }
    }

    @Test func dedicatedThreadsAreListedAfterTheSharedWorkers() async throws {
        try await withTestSystem { system in
            let blocker = system.spawn(Blocker(), options: SpawnOptions(executor: .dedicatedThread))
            let gate = Gate()
            blocker.tell(.block(gate))
            await waitUntil { gate.entered == 1 }
            let snapshot = system.snapshot()
            gate.open()
            let dedicated = try #require(snapshot.workers.first { $0.isDedicated })
            #expect(dedicated.index == 2)
            #expect(dedicated.running?.actor == blocker.address)
        }
    }

    @Test func jobLanesOfSwiftExecutorsAreListed() async throws {
        try await withTestSystem { system in
            let executor = system.makeSerialExecutor()
            let value = await Task(executorPreference: system.taskExecutor) { 42 }.value
            #expect(value == 42)
            let snapshot = system.snapshot()
            let serial = snapshot.jobLanes.filter { $0.executor == .serial }
            #expect(serial.count == 1)
            #expect(snapshot.jobLanes.filter { if case .task = $0.executor { true } else { false } }.count == 2)
            #expect(snapshot.jobLanes.reduce(0) { $0 + $1.jobsRun } >= 1)
            _ = executor
        }
    }

    @Test func perActorHistogramsRecordEverySampledMessage() async throws {
        let timed = AtomicCounter()
        try await withTestSystem(introspection: .init(samplingInterval: 1, perActorHistograms: true)) { system in
            let observation = system.hooks.onMessageTimed { _ in _ = timed.increment() }
            let counter = system.spawn(Counter())
            // The sending thread picks the interval up within 1,024 sends.
            for _ in 0..<3_000 { counter.tell(.add(1)) }
            #expect(try await counter.ask { .get($0) } == 3_000)
            let snapshot = system.snapshot()
            let seen = try #require(snapshot.actors.first { $0.address == counter.address })
            let handler = try #require(seen.handlerDuration)
            let waited = try #require(seen.timeInMailbox)
            #expect(handler.count >= 3_001 - 1_024)
            #expect(waited.count == handler.count)
            #expect(snapshot.handlerDuration.count >= handler.count, "the system's histogram has them too")
            #expect(waited.maximum < .seconds(30))
            #expect(timed.value >= Int(handler.count))
            observation.cancel()
        }
    }

    @Test func withSamplingOffNothingIsRecorded() async throws {
        try await withTestSystem(introspection: .off) { system in
            let counter = system.spawn(Counter())
            for _ in 0..<5_000 { counter.tell(.add(1)) }
            let total = try await counter.ask { .get($0) }
            #expect(total == 5_000)
            let (waited, handler) = system.latencyHistograms
            // Other suites' systems make the process stamp envelopes; this system records none.
            #expect(waited.count == 0)
            #expect(handler.count == 0)
        }
    }
}
