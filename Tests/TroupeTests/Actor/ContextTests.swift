import Logging
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// `ActorContext`: identity, children, stop, asynchronous work and asks whose results come
/// back as messages.
@Suite struct ContextTests {
    @Test func contextKnowsItsActorAndSystem() async throws {
        // A logger whose handler keeps metadata (the default test logger discards it).
        try await withTestSystem(logger: recordingLogger(into: Recorder())) { system in
            let actor = system.spawn(ContextActor(), options: SpawnOptions(name: "ctx"))
            let info = try await actor.ask { ContextActor.Message.identity($0) }
            #expect(info.ref == actor)
            #expect(info.address == actor.address)
            #expect(info.sameSystem)
            #expect(info.loggerActor == "\(actor.address)")
        }
    }

    @Test func spawnedChildWorks() async throws {
        try await withTestSystem { system in
            let parent = system.spawn(ContextActor())
            let child = try await parent.ask { ContextActor.Message.spawnChild(nil, $0) }
            let answer1 = try await child.ask { ContextActor.Message.echo(3, $0) }
            #expect(answer1 == 3)
            #expect(system.liveActorCount == 2)
        }
    }

    @Test func childrenAndGrandchildrenStopWithTheirParent() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let parent = system.spawn(ContextActor(name: "parent", events: events))
            let child = try await parent.ask { ContextActor.Message.spawnChild("child", $0) }
            let grandchild = try await child.ask { ContextActor.Message.spawnChild("grandchild", $0) }
            parent.stop()
            // `terminated()` resolves after each `stopped` hook ran (`isStopped` turns true before it).
            _ = await parent.terminated()
            _ = await child.terminated()
            _ = await grandchild.terminated()
            let stops = events.values.filter { $0.hasPrefix("stopped") }
            #expect(Set(stops) == ["stopped parent", "stopped child", "stopped grandchild"])
            await waitUntil("no live actor") { system.liveActorCount == 0 }
        }
    }

    @Test func childStoppingDoesNotStopItsParent() async throws {
        try await withTestSystem { system in
            let parent = system.spawn(ContextActor())
            let child = try await parent.ask { ContextActor.Message.spawnChild(nil, $0) }
            child.stop()
            await waitUntil("child stopped") { child.isStopped }
            let answer2 = try await parent.ask { ContextActor.Message.echo(1, $0) }
            #expect(answer2 == 1)
            #expect(!parent.isStopped)
            // A stopped child is forgotten: stopping the parent later is clean.
            parent.stop()
            await waitUntil("parent stopped") { parent.isStopped }
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func restartableChildFromAFactoryRestarts() async throws {
        try await withTestSystem { system in
            let parent = system.spawn(ContextActor())
            let child = try await parent.ask { ContextActor.Message.spawnRestartableChild($0) }
            child.tell(.add(5))
            child.tell(.fail)
            // Restarted from the factory: state is fresh, the actor is alive.
            let answer3 = try await child.ask { ContextActor.Message.total($0) }
            #expect(answer3 == 0)
            #expect(!child.isStopped)
        }
    }

    @Test func contextStopDeadLettersTheRestOfTheMailbox() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let events = Recorder<String>()
            let letters = Recorder<DeadLetter>()
            system.deadLetters.observe { letters.append($0) }
            let actor = system.spawn(ContextActor(events: events, gate: gate))
            actor.tell(.block)
            await waitUntil("blocked") { gate.entered == 1 }
            actor.tell(.add(1))
            actor.tell(.stopSelf)
            actor.tell(.add(2))
            actor.tell(.add(3))
            actor.tell(.add(4))
            gate.open()
            await waitUntil("three dead letters") { letters.count == 3 }
            #expect(actor.isStopped)
            #expect(events.values == ["started", "add 1", "stopped"])
            #expect(letters.values.allSatisfy { $0.reason == .recipientStopped && $0.recipient == actor.address })
            let added = letters.values.compactMap { letter -> Int? in
                guard case .add(let value)? = letter.message as? ContextActor.Message else { return nil }
                return value
            }
            #expect(added == [2, 3, 4])
        }
    }

    @Test func contextStopInStartedStopsBeforeTheFirstMessage() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let actor = system.spawn(ContextActor(events: events, stopInStarted: true))
            actor.tell(.add(1))
            _ = await actor.terminated()  // after `stopped` ran (isStopped turns true before it)
            await waitUntil("message dead-lettered (or rejected)") { system.deadLetters.count(.recipientStopped) == 1 }
            #expect(events.values == ["started", "stopped"])
        }
    }

    @Test func runDeliversTheResultOfAsyncWorkAsAMessage() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let actor = system.spawn(ContextActor(events: events))
            actor.tell(.runWork(value: 6, fail: false))
            actor.tell(.runWork(value: 0, fail: true))
            await waitUntil("both results arrived") { events.values.filter { $0.hasPrefix("work") }.count == 2 }
            let results = events.values.filter { $0.hasPrefix("work") }
            #expect(Set(results) == ["work success 36", "work failure TestError(work failed)"])
            // Results are handled on the actor, like any message: its state saw them.
            let answer4 = try await actor.ask { ContextActor.Message.total($0) }
            #expect(answer4 == 36)
        }
    }

    @Test func askFromContextDeliversTheAnswerAsAMessage() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let server = system.spawn(AskServer())
            let actor = system.spawn(ContextActor(events: events))
            actor.tell(.askOther(server, 21))
            await waitUntil("answer arrived") { events.values.contains { $0.hasPrefix("answer") } }
            #expect(events.values.contains("answer success 42"))
            let answer5 = try await actor.ask { ContextActor.Message.total($0) }
            #expect(answer5 == 42)
        }
    }

    @Test func askFromContextDeliversAskErrorsAsAMessage() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let server = system.spawn(AskServer())
            let actor = system.spawn(ContextActor(events: events))
            actor.tell(.askOtherWithoutAnswer(server))
            await waitUntil("timeout arrived") { events.values.contains { $0.hasPrefix("answer") } }
            #expect(events.values.contains("answer failure timedOut"))
            server.stop()
            await waitUntil("server stopped") { server.isStopped }
            actor.tell(.askOther(server, 1))
            await waitUntil("stop error arrived") { events.values.filter { $0.hasPrefix("answer") }.count == 2 }
            #expect(events.values.contains("answer failure recipientStopped"))
        }
    }
}

// MARK: - Test actors

struct ContextInfo: Sendable {
    let ref: ActorRef<ContextActor.Message>
    let address: ActorAddress
    let sameSystem: Bool
    let loggerActor: String?
}

struct ContextActor: ActorDefinition {
    enum Message: Sendable {
        case identity(Reply<ContextInfo>)
        case spawnChild(String?, Reply<ActorRef<Message>>)
        case spawnRestartableChild(Reply<ActorRef<Message>>)
        case echo(Int, Reply<Int>)
        case add(Int)
        case total(Reply<Int>)
        case fail
        case block
        case stopSelf
        case runWork(value: Int, fail: Bool)
        case workDone(Result<Int, any Error>)
        case askOther(ActorRef<AskServer.Message>, Int)
        case askOtherWithoutAnswer(ActorRef<AskServer.Message>)
        case answer(Result<Int, AskError>)
    }

    var name: String?
    var events: Recorder<String>?
    var gate: Gate?
    var stopInStarted = false
    var sum = 0

    init(name: String? = nil, events: Recorder<String>? = nil, gate: Gate? = nil, stopInStarted: Bool = false) {
        self.name = name
        self.events = events
        self.gate = gate
        self.stopInStarted = stopInStarted
    }

    mutating func started(context: ActorContext<Message>) {
        events?.append(name.map { "started \($0)" } ?? "started")
        if stopInStarted { context.stop() }
    }

    mutating func stopped(context: ActorContext<Message>) {
        events?.append(name.map { "stopped \($0)" } ?? "stopped")
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .identity(let reply):
            reply.succeed(
                ContextInfo(
                    ref: context.ref, address: context.address,
                    sameSystem: context.system === context.ref.system,
                    loggerActor: context.logger[metadataKey: "actor"].map { "\($0)" }
                ))
        case .spawnChild(let childName, let reply):
            reply.succeed(context.spawn(ContextActor(name: childName, events: events)))
        case .spawnRestartableChild(let reply):
            reply.succeed(context.spawn(options: SpawnOptions(failureDecider: { _ in .restart })) { ContextActor() })
        case .echo(let value, let reply): reply.succeed(value)
        case .add(let value):
            sum += value
            events?.append("add \(value)")
        case .total(let reply): reply.succeed(sum)
        case .fail: throw TestError("fail")
        case .block: gate?.enter()
        case .stopSelf: context.stop()
        case .runWork(let value, let fail):
            context.run(
                {
                    await Task.yield()
                    if fail { throw TestError("work failed") }
                    return value * value
                }, then: { Message.workDone($0) })
        case .workDone(let result):
            switch result {
            case .success(let value):
                sum += value
                events?.append("work success \(value)")
            case .failure(let error): events?.append("work failure \(error)")
            }
        case .askOther(let server, let value):
            context.ask(
                server, timeout: .seconds(30), { AskServer.Message.double(value, $0) }, then: { Message.answer($0) })
        case .askOtherWithoutAnswer(let server):
            context.ask(
                server, timeout: .milliseconds(20), { AskServer.Message.hold($0) }, then: { Message.answer($0) })
        case .answer(let result):
            switch result {
            case .success(let value):
                sum += value
                events?.append("answer success \(value)")
            case .failure(let error): events?.append("answer failure \(error.kind)")
            }
        }
    }
}
