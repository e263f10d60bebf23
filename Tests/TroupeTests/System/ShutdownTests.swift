import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Graceful shutdown: pending messages are handled, every message is accounted for, later
/// messages and spawns are refused.
@Suite struct ShutdownTests {
    @Test func pendingMessagesAreHandledBeforeTheActorsStop() async throws {
        let system = makeTestSystem()
        let gate = Gate()
        let received = Recorder<Int>()
        let events = Recorder<String>()
        let probe = system.spawn(Probe<Int>(received: received, events: events, gate: gate, holdWhen: { $0 == 0 }))
        var sent = 0
        for value in 0..<1000 where probe.tell(value).isEnqueued { sent += 1 }
        await waitUntil("held") { gate.entered == 1 }
        let shutdown = Task { await system.shutdown() }
        await waitUntil("shutting down") { system.isShuttingDown }
        gate.open()
        await shutdown.value
        #expect(sent == 1000)
        #expect(received.values == Array(0..<1000))
        #expect(events.values.last == "stopped")
        #expect(received.count + system.deadLetters.total == sent)
        #expect(system.liveActorCount == 0)
    }

    @Test func handledPlusDeadLetteredEqualsSentForManyActors() async throws {
        let system = makeTestSystem()
        let handled = AtomicCounter()
        let actors = (0..<50).map { _ in system.spawn(CountingSink(handled: handled)) }
        var sent = 0
        for round in 0..<200 {
            for (index, actor) in actors.enumerated() {
                actor.tell(round)
                sent += 1
                if round == 100 && index % 5 == 0 { actor.stop() }
            }
        }
        await system.shutdown()
        #expect(handled.value + system.deadLetters.total == sent)
        #expect(system.deadLetters.count(.recipientStopped) == system.deadLetters.total)
        #expect(system.deadLetters.total > 0, "stopped actors dead-lettered what came later")
    }

    @Test func tellAfterShutdownIsDeadLetteredWithSystemShutdown() async throws {
        let system = makeTestSystem()
        let probe = system.spawn(Probe<Int>())
        await system.shutdown()
        #expect(probe.tell(1) == .deadLettered(.systemShutdown))
        #expect(system.deadLetters.count(.systemShutdown) == 1)
    }

    @Test func askAfterShutdownIsUndeliverableWithSystemShutdown() async throws {
        let system = makeTestSystem()
        let server = system.spawn(AskServer())
        await system.shutdown()
        let result = await askResult { try await server.ask(timeout: .seconds(30)) { AskServer.Message.double(1, $0) } }
        guard case .failure(.undeliverable(let reason)) = result else {
            Issue.record("expected .undeliverable(.systemShutdown), got \(result)")
            return
        }
        #expect(reason == .systemShutdown)
    }

    @Test func tellDuringShutdownIsDeadLetteredWithSystemShutdown() async throws {
        let system = makeTestSystem()
        let gate = Gate()
        let received = Recorder<Int>()
        let probe = system.spawn(Probe<Int>(received: received, gate: gate, holdWhen: { $0 == 0 }))
        probe.tell(0)
        await waitUntil("held") { gate.entered == 1 }
        let shutdown = Task { await system.shutdown() }
        await waitUntil("shutting down") { system.isShuttingDown }
        #expect(probe.tell(1) == .deadLettered(.systemShutdown))
        gate.open()
        await shutdown.value
        #expect(received.values == [0])
        #expect(system.deadLetters.count(.systemShutdown) == 1)
    }

    @Test func spawnDuringShutdownYieldsAStoppedActorThatNeverRuns() async throws {
        let system = makeTestSystem()
        let gate = Gate()
        let holder = system.spawn(Probe<Int>(gate: gate, holdWhen: { _ in true }))
        holder.tell(0)
        await waitUntil("held") { gate.entered == 1 }
        let shutdown = Task { await system.shutdown() }
        await waitUntil("shutting down") { system.isShuttingDown }
        let events = Recorder<String>()
        let late = system.spawn(Probe<Int>(events: events))
        #expect(late.isStopped)
        #expect(!late.tell(1).isEnqueued)
        gate.open()
        await shutdown.value
        #expect(events.values.isEmpty, "neither started nor stopped ran")
    }

    @Test func spawnFromAStoppedHookDuringShutdownYieldsAStoppedActor() async throws {
        let system = makeTestSystem()
        let childStopped = Recorder<Bool>()
        system.spawn(SpawnOnStop(result: childStopped))
        await system.shutdown()
        #expect(childStopped.values == [true])
    }

    @Test func spawnAfterShutdownYieldsAStoppedActor() async throws {
        let system = makeTestSystem()
        await system.shutdown()
        let events = Recorder<String>()
        let late = system.spawn(Probe<Int>(events: events))
        let dedicated = system.spawn(Probe<Int>(), options: SpawnOptions(executor: .dedicatedThread))
        #expect(late.isStopped)
        #expect(dedicated.isStopped)
        #expect(!late.tell(1).isEnqueued)
        #expect(!dedicated.tell(1).isEnqueued)
        #expect(system.liveActorCount == 0)
        #expect(events.values.isEmpty)
    }

    @Test func shutdownStopsChildrenAndDedicatedActorsAndLeavesNoLiveActor() async throws {
        let system = makeTestSystem()
        let events = Recorder<String>()
        let parent = system.spawn(ContextActor(name: "parent", events: events))
        let child = try await parent.ask { ContextActor.Message.spawnChild("child", $0) }
        let dedicated = system.spawn(
            ContextActor(name: "dedicated", events: events),
            options: SpawnOptions(executor: .dedicatedThread))
        let answer1 = try await dedicated.ask { ContextActor.Message.echo(1, $0) }
        #expect(answer1 == 1)
        #expect(system.liveActorCount == 3)
        await system.shutdown()
        #expect(system.isShuttingDown)
        #expect(system.liveActorCount == 0)
        #expect(parent.isStopped && child.isStopped && dedicated.isStopped)
        #expect(
            Set(events.values.filter { $0.hasPrefix("stopped") }) == [
                "stopped parent", "stopped child", "stopped dedicated",
            ])
    }

    @Test func shuttingDownAnEmptySystemReturns() async {
        let system = makeTestSystem()
        #expect(!system.isShuttingDown)
        await system.shutdown()
        #expect(system.isShuttingDown)
    }

    @Test func concurrentAndRepeatedShutdownsAllReturnAfterTheWorkIsDone() async throws {
        let system = makeTestSystem()
        let gate = Gate()
        let events = Recorder<String>()
        let probe = system.spawn(Probe<Int>(events: events, gate: gate, holdWhen: { _ in true }))
        probe.tell(0)
        await waitUntil("held") { gate.entered == 1 }
        let finished = AtomicCounter()
        let first = Task {
            await system.shutdown(); finished.increment()
        }
        let second = Task {
            await system.shutdown(); finished.increment()
        }
        let third = await TestThreads.onNewThread { () -> Bool in
            // A blocking caller on a plain thread, started while the others wait.
            waitUntilBlocking("shutdown began") { system.isShuttingDown }
            gate.open()
            system.shutdownBlocking()
            return events.values.last == "stopped"
        }
        await first.value
        await second.value
        #expect(third, "shutdownBlocking returned after the actor stopped")
        #expect(finished.value == 2)
        #expect(events.values == ["started", "message", "stopped"])
        await system.shutdown()  // once more, after the fact
    }

    /// An ask whose reply the actor keeps in its state must still end when the system shuts
    /// down (the ask contract: never hangs without an `AskError`).
    @Test func askPendingAtShutdownDoesNotHangForever() async throws {
        let system = makeTestSystem()
        let server = system.spawn(AskServer())
        let results = Recorder<Result<Int, AskError>>()
        server.ask(timeout: .seconds(2), { AskServer.Message.hold($0) }, onReply: { results.append($0) })
        // The request is held once the server answers a later ask (FIFO).
        let answer2 = try await server.ask { AskServer.Message.double(1, $0) }
        #expect(answer2 == 2)
        await system.shutdown()
        await waitUntil(timeout: .seconds(15), "the held ask completes after shutdown") { results.count == 1 }
        if let result = results.values.first {
            #expect(result.askError != nil, "got \(result)")
        }
    }

    @Test func shutdownBlockingOnAWorkerThreadIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            let actor = system.spawn(ShutdownFromInside())
            _ = try? await actor.ask(timeout: .seconds(30)) { ShutdownFromInside.Message.shutdown($0) }
        }
    }
}

// MARK: - Test actors

struct CountingSink: ActorDefinition {
    let handled: AtomicCounter
    mutating func receive(_ message: Int, context: ActorContext<Int>) { handled.increment() }
}

/// Spawns another actor from its `stopped` hook and reports whether it came out stopped.
struct SpawnOnStop: ActorDefinition {
    let result: Recorder<Bool>
    mutating func receive(_ message: Int, context: ActorContext<Int>) {}
    mutating func stopped(context: ActorContext<Int>) {
        let child = context.spawn(Probe<Int>())
        let other = context.system.spawn(Probe<Int>())
        result.append(child.isStopped && other.isStopped)
    }
}

struct ShutdownFromInside: ActorDefinition {
    enum Message: Sendable { case shutdown(Reply<Bool>) }
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .shutdown(let reply):
            context.system.shutdownBlocking()
            reply.succeed(true)
        }
    }
}
