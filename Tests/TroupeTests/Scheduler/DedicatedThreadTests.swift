import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// `.dedicatedThread` executor: the actor runs on a thread of its own, so a blocking handler
/// cannot starve the shared workers, and vice versa.
@Suite struct DedicatedThreadTests {
    @Test func dedicatedActorRunsWhileEverySharedWorkerIsBusy() async throws {
        // Both shared workers are held by two shared actors: if the dedicated actor needed a
        // shared worker, it could not handle anything until they are released.
        try await withTestSystem(workers: 2) { system in
            let gate = Gate()
            let sharedThreads = Recorder<UInt>()
            let holders = (0..<2).map { _ in system.spawn(ThreadReporter(gate: gate, threads: sharedThreads)) }
            for holder in holders { holder.tell(.hold) }
            await waitUntil("both shared workers held") { gate.entered == 2 }
            let dedicatedThreads = Recorder<UInt>()
            let dedicated = system.spawn(
                ThreadReporter(threads: dedicatedThreads), options: SpawnOptions(executor: .dedicatedThread))
            for _ in 0..<100 { dedicated.tell(.report) }
            await waitUntil("dedicated actor handled everything") { dedicatedThreads.count == 100 }
            gate.open()
            #expect(Set(dedicatedThreads.values).count == 1, "always the same thread")
            #expect(Set(sharedThreads.values).count == 2, "the two held workers")
            #expect(Set(dedicatedThreads.values).isDisjoint(with: sharedThreads.values), "not a shared worker")
        }
    }

    @Test func blockingDedicatedHandlerDoesNotStopSharedActors() async throws {
        try await withTestSystem(workers: 2) { system in
            let gate = Gate()
            let blocker = system.spawn(ThreadReporter(gate: gate), options: SpawnOptions(executor: .dedicatedThread))
            blocker.tell(.hold)
            await waitUntil("dedicated handler blocked") { gate.entered == 1 }
            let handled = AtomicCounter()
            let sharedActors = (0..<20).map { _ in system.spawn(CountingSink(handled: handled)) }
            for round in 0..<500 { for actor in sharedActors { actor.tell(round) } }
            await waitUntil("shared actors progressed with the dedicated one blocked") { handled.value == 10_000 }
            #expect(gate.isOpen == false, "still blocked while the shared actors finished")
            gate.open()
            blocker.tell(.report)
            let answer1 = try await blocker.ask { ThreadReporter.Message.ping($0) }
            #expect(answer1)
        }
    }

    @Test func eachDedicatedActorHasItsOwnThread() async throws {
        try await withTestSystem { system in
            let threads = Recorder<UInt>()
            let actors = (0..<4).map { index in
                system.spawn(
                    ThreadReporter(threads: threads),
                    options: SpawnOptions(name: "dedicated-\(index)", executor: .dedicatedThread))
            }
            for actor in actors { for _ in 0..<10 { actor.tell(.report) } }
            await waitUntil("all reported") { threads.count == 40 }
            #expect(Set(threads.values).count == 4)
        }
    }

    @Test func dedicatedActorKeepsPerSenderOrderAndTalksToSharedActors() async throws {
        try await withTestSystem { system in
            let received = Recorder<Int>()
            let sink = system.spawn(Probe<Int>(received: received))
            let forwarder = system.spawn(Forwarder(target: sink), options: SpawnOptions(executor: .dedicatedThread))
            for value in 0..<5000 { forwarder.tell(value) }
            await waitUntil("forwarded") { received.count == 5000 }
            #expect(received.values == (0..<5000).map { $0 * 2 })
            // And an ask from the dedicated actor to a shared one, and back.
            let server = system.spawn(AskServer())
            let events = Recorder<String>()
            let asker = system.spawn(ContextActor(events: events), options: SpawnOptions(executor: .dedicatedThread))
            asker.tell(.askOther(server, 4))
            await waitUntil("answer") { events.values.contains("answer success 8") }
            let answer2 = try await asker.ask { ContextActor.Message.echo(5, $0) }
            #expect(answer2 == 5)
        }
    }

    @Test func manyShortLivedDedicatedActorsStartAndStopCleanly() async throws {
        let system = makeTestSystem()
        let events = Recorder<String>()
        for index in 0..<40 {
            let actor = system.spawn(
                ContextActor(name: "\(index)", events: events), options: SpawnOptions(executor: .dedicatedThread))
            let answer3 = try await actor.ask { ContextActor.Message.echo(index, $0) }
            #expect(answer3 == index)
            actor.stop()
            await waitUntil("stopped \(index)") { actor.isStopped }
        }
        await system.shutdown()
        #expect(events.values.filter { $0.hasPrefix("stopped") }.count == 40)
        #expect(system.deadLetters.total == 0)
    }

    @Test func dedicatedActorWithBoundedMailboxAndFailureDecider() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let received = Recorder<Int>()
            let probe = system.spawn(
                Probe<Int>(received: received, gate: gate, holdWhen: { $0 == 0 }),
                options: SpawnOptions(
                    name: "bounded-dedicated", mailbox: .bounded(capacity: 2, overflow: .dropNewest),
                    executor: .dedicatedThread))
            probe.tell(0)
            await waitUntil("held") { gate.entered == 1 }
            #expect((1...3).map { probe.tell($0) } == [.enqueued, .enqueued, .deadLettered(.mailboxFull(.dropNewest))])
            gate.open()
            await waitUntil("drained") { received.count == 3 }
            #expect(received.values == [0, 1, 2])
        }
    }
}

// MARK: - Test actors

/// Reports the OS thread each message runs on; `.hold` waits at the gate.
struct ThreadReporter: ActorDefinition {
    enum Message: Sendable {
        case hold
        case report
        case ping(Reply<Bool>)
    }

    var gate: Gate?
    var threads: Recorder<UInt>?

    init(gate: Gate? = nil, threads: Recorder<UInt>? = nil) {
        self.gate = gate
        self.threads = threads
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        threads?.append(TestThreads.currentID)
        switch message {
        case .hold: gate?.enter()
        case .report: break
        case .ping(let reply): reply.succeed(true)
        }
    }
}
