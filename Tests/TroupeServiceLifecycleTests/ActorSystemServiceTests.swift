import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing
import Troupe
import TroupeServiceLifecycle
import TroupeTestSupport

/// The actor system as a `Service`: graceful shutdown drains, cancellation is prompt, and in a
/// `ServiceGroup` a server listed after it finishes its requests' asks before the actors drain.
@Suite struct ActorSystemServiceTests {
    /// Handles each message slowly, counting them.
    struct Slow: ActorDefinition {
        enum Message: Sendable {
            case work(AtomicCounter)
            case block(Gate)
            /// Blocks at the gate, then sets the flag.
            case blockThenMark(Gate, Flag)
            case echo(Int, Reply<Int>)
        }
        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .work(let done):
                usleepMicroseconds(200)
                _ = done.increment()
            case .block(let gate): gate.enter()
            case .blockThenMark(let gate, let finished):
                gate.enter()
                finished.set()
            case .echo(let value, let reply): reply.succeed(value)
            }
        }
    }

    @Test func gracefulShutdownDrainsEveryMailboxBeforeRunReturns() async throws {
        let system = makeTestSystem()
        let done = AtomicCounter()
        let stopped = AtomicCounter()
        system.hooks.onActorStopped { _ in _ = stopped.increment() }
        let actors = (0..<4).map { _ in system.spawn(Slow()) }
        try await testGracefulShutdown { trigger in
            let service = ActorSystemService(system)
            // On Troupe's workers: Swift's 2-thread global pool can be held for seconds by other
            // suites' blocking waits on this machine (seen: 10.8 s before the task ran).
            let running = Task(executorPreference: system.taskExecutor) { try await service.run() }
            for round in 0..<200 { actors[round % 4].tell(.work(done)) }
            trigger.triggerGracefulShutdown()
            try await running.value
        }
        #expect(done.value == 200, "every message sent before the shutdown was handled")
        #expect(stopped.value == 4, "every actor's stopped hook ran")
        #expect(system.isShuttingDown)
        #expect(system.liveActorCount == 0)
    }

    @Test func cancellationEndsRunPromptlyEvenWithAHandlerThatBlocks() async throws {
        let system = makeTestSystem()
        let blocker = system.spawn(Slow())
        let gate = Gate()
        let handlerFinished = Flag()
        blocker.tell(.blockThenMark(gate, handlerFinished))
        await waitUntil { gate.entered == 1 }
        let service = ActorSystemService(system, cancellationDeadline: .milliseconds(50))
        // Whether the handler had finished when run() returned, read on the task. (Not a time
        // bound: CI's parallel suites have held every thread of this process for 15 s.) Had run()
        // waited for the handler, it would return only after the gate's 60 s safety timeout let
        // the handler finish.
        let running = Task(executorPreference: system.taskExecutor) {
            try await service.run()
            return handlerFinished.isSet
        }
        running.cancel()
        let finishedFirst = try await running.value
        #expect(!finishedFirst, "cancellation does not wait for the handler")
        #expect(system.isShuttingDown)
        do {
            let echoed = try await blocker.ask { .echo(1, $0) }
            Issue.record("an ask after the shutdown was answered: \(echoed)")
        } catch {
            switch error {
            case .undeliverable, .recipientStopped: break
            default: Issue.record("refused as undeliverable, not \(error)")
            }
        }
        gate.open()
        await waitUntil { system.liveActorCount == 0 }
    }

    /// Stands for an HTTP server: while running it serves requests by asking an actor; on
    /// graceful shutdown it stops accepting and finishes the requests in flight.
    final class FakeServer: Service, Sendable {
        let backend: ActorRef<Slow.Message>
        let answered = AtomicCounter()
        let failed = AtomicCounter()
        let accepting = Atomic<Bool>(true)
        init(backend: ActorRef<Slow.Message>) { self.backend = backend }

        func run() async throws {
            await withDiscardingTaskGroup { group in
                var request = 0
                while !Task.isShuttingDownGracefully {
                    request += 1
                    let value = request
                    group.addTask {
                        do {
                            // A request that takes a while: its asks outlive the shutdown signal.
                            for step in 0..<5 {
                                let echoed = try await self.backend.ask { .echo(value + step, $0) }
                                precondition(echoed == value + step)
                                try? await Task.sleep(for: .milliseconds(2))
                            }
                            _ = self.answered.increment()
                        } catch {
                            _ = self.failed.increment()
                        }
                    }
                    try? await Task.sleep(for: .milliseconds(1))
                }
                accepting.store(false, ordering: .sequentiallyConsistent)
            }
        }
    }

    @Test func inAServiceGroupTheServerFinishesItsAsksBeforeTheActorsDrain() async throws {
        let system = makeTestSystem()
        let backend = system.spawn(Slow())
        let server = FakeServer(backend: backend)
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: ActorSystemService(system)), .init(service: server)],
                logger: quietLogger))
        // On Troupe's workers (the group and its services' tasks inherit the preference): on the
        // 2-thread global pool, other suites' blocking waits starved this test once for 20 s.
        let running = Task(executorPreference: system.taskExecutor) { try await group.run() }
        await waitUntil(timeout: .seconds(60)) { server.answered.value >= 20 }
        await group.triggerGracefulShutdown()
        try await running.value
        let stillAccepting = server.accepting.load(ordering: .sequentiallyConsistent)
        #expect(!stillAccepting)
        #expect(server.failed.value == 0, "no request in flight lost its ask to the actors' shutdown")
        #expect(server.answered.value >= 20)
        #expect(system.liveActorCount == 0)
    }

    @Test func aGracefulShutdownDeadlineIsReportedWhenAHandlerOutlivesIt() async throws {
        let logs = Recorder<LogRecord>()
        let system = makeTestSystem(logger: recordingLogger(into: logs, level: .warning))
        let blocker = system.spawn(Slow(), options: SpawnOptions(name: "stuck"))
        let gate = Gate()
        blocker.tell(.block(gate))
        await waitUntil { gate.entered == 1 }
        try await testGracefulShutdown { trigger in
            let running = Task(executorPreference: system.taskExecutor) {
                try await ActorSystemService(system, shutdownDeadline: .milliseconds(50)).run()
            }
            trigger.triggerGracefulShutdown()
            try await running.value
        }
        let warning = try #require(
            logs.values.first { $0.message == "actor system shut down with handlers still running" })
        #expect(warning.metadata["cause"] == "deadline")
        #expect(warning.metadata["unstopped"]?.description.contains("stuck") == true)
        gate.open()
        await waitUntil { system.liveActorCount == 0 }
    }
}

/// Sleeps the calling thread (a handler doing slow work).
func usleepMicroseconds(_ microseconds: Int) {
    let deadline = ContinuousClock.now + .microseconds(microseconds)
    while ContinuousClock.now < deadline {}
}
