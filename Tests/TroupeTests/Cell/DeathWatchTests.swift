import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Death watch: Terminated notices arrive exactly once, with the reason, also for targets that
/// were already dead, and never after unwatch.
@Suite struct DeathWatchTests {
    @Test func aWatcherGetsOneNoticeWithTheReason() async throws {
        try await withTestSystem { system in
            let notices = Recorder<String>()
            let target = system.spawn(Fragile())
            let watcher = system.spawn(Watcher(notices: notices))
            _ = try await watcher.ask { Watcher.Message.watch(target, $0) }
            target.tell(.fail("broken"))
            await waitUntil("notice arrived") { notices.count == 1 }
            #expect(notices.values == ["\(target.address) failed: TestError(broken)"])
            // Nothing more arrives, whatever happens later.
            target.stop()
            _ = try await watcher.ask { Watcher.Message.ping($0) }
            #expect(notices.count == 1)
        }
    }

    @Test func watchingAnActorThatAlreadyStoppedDeliversTheNoticeAtOnce() async throws {
        try await withTestSystem { system in
            let notices = Recorder<String>()
            let target = system.spawn(Fragile())
            target.stop()
            await waitUntil("target stopped") { target.isStopped }
            // Let the target leave the live actors entirely.
            _ = await target.terminated()
            let watcher = system.spawn(Watcher(notices: notices))
            _ = try await watcher.ask { Watcher.Message.watch(target, $0) }
            await waitUntil("late watcher told") { notices.count == 1 }
            #expect(notices.values == ["\(target.address) stopped"])
        }
    }

    @Test func unwatchCancelsTheNoticeEvenWhenItIsAlreadyOnItsWay() async throws {
        try await withTestSystem { system in
            let notices = Recorder<String>()
            let gate = Gate()
            let watcher = system.spawn(Watcher(notices: notices, gate: gate))
            let target = system.spawn(Fragile())
            _ = try await watcher.ask { Watcher.Message.watch(target, $0) }
            watcher.tell(.block)
            await waitUntil("watcher blocked") { gate.entered == 1 }
            target.stop()
            _ = await target.terminated()
            // The notice is in the blocked watcher's mailbox, ahead of this unwatch (FIFO).
            watcher.tell(.unwatchNext(target))
            gate.open()
            _ = try await watcher.ask { Watcher.Message.ping($0) }
            #expect(notices.count == 1, "the notice was ahead of the unwatch in the mailbox")

            let second = system.spawn(Fragile())
            _ = try await watcher.ask { Watcher.Message.watch(second, $0) }
            _ = try await watcher.ask { Watcher.Message.unwatch(second, $0) }
            second.stop()
            _ = await second.terminated()
            _ = try await watcher.ask { Watcher.Message.ping($0) }
            #expect(notices.count == 1, "no notice after unwatch")
        }
    }

    @Test func aNoticeQueuedBehindTheUnwatchIsDiscarded() async throws {
        try await withTestSystem { system in
            let notices = Recorder<String>()
            let gate = Gate()
            let watcher = system.spawn(Watcher(notices: notices, gate: gate))
            let target = system.spawn(Fragile())
            _ = try await watcher.ask { Watcher.Message.watch(target, $0) }
            // The watcher blocks in a handler that unwatches after the target has terminated,
            // so the notice is already in its mailbox when the unwatch happens.
            watcher.tell(.blockThenUnwatch(target))
            await waitUntil("watcher blocked") { gate.entered == 1 }
            target.stop()
            _ = await target.terminated()
            gate.open()
            _ = try await watcher.ask { Watcher.Message.ping($0) }
            #expect(notices.count == 0)
        }
    }

    @Test func callbacksAndAwaitersAreToldExactlyOnce() async throws {
        try await withTestSystem { system in
            let calls = AtomicCounter()
            let target = system.spawn(Fragile())
            for _ in 0..<10 { target.whenTerminated { _ in calls.increment() } }
            async let waited = target.terminated()
            target.tell(.fail("done"))
            let terminated = await waited
            #expect(terminated.actor == target.address)
            #expect(terminated.reason.isFailure)
            await waitUntil("all callbacks") { calls.value == 10 }
            target.whenTerminated { _ in calls.increment() }
            #expect(calls.value == 11, "already dead: called at once")
        }
    }

    /// A target keeps one watcher inline and several in a list: an unwatch from either form
    /// removes only that watcher's watch.
    @Test func anUnwatchLeavesTheTargetsOtherWatchersInPlace() async throws {
        try await withTestSystem { system in
            let stays = Recorder<String>()
            let leaves = Recorder<String>()
            let calls = AtomicCounter()
            let target = system.spawn(Fragile())
            let staying = system.spawn(Watcher(notices: stays))
            let leaving = system.spawn(Watcher(notices: leaves))
            _ = try await leaving.ask { Watcher.Message.watch(target, $0) }
            _ = try await leaving.ask { Watcher.Message.unwatch(target, $0) }  // the only watcher
            _ = try await leaving.ask { Watcher.Message.watch(target, $0) }
            _ = try await staying.ask { Watcher.Message.watch(target, $0) }
            target.whenTerminated { _ in calls.increment() }
            _ = try await leaving.ask { Watcher.Message.unwatch(target, $0) }  // one of three
            target.stop()
            _ = await target.terminated()
            await waitUntil("the staying watcher's notice") { stays.count == 1 }
            _ = try await leaving.ask { Watcher.Message.ping($0) }
            #expect(leaves.count == 0)
            #expect(calls.value == 1)
        }
    }

    @Test func childrenStopWithTheReasonParentStopped() async throws {
        try await withTestSystem { system in
            let parent = system.spawn(Nursery())
            let child = try await parent.ask { Nursery.Message.spawnChild($0) }
            parent.stop()
            let terminated = await child.terminated()
            #expect("\(terminated.reason)" == "parent stopped")
        }
    }

    @Test func shutdownIsReportedAsTheReason() async throws {
        let system = makeTestSystem()
        let reasons = Recorder<String>()
        for _ in 0..<3 { system.spawn(Fragile()).whenTerminated { reasons.append("\($0.reason)") } }
        await system.shutdown()
        #expect(reasons.values == Array(repeating: "system shutdown", count: 3))
    }

    @Test func aStoppedWatcherLeavesNoWatchBehind() async throws {
        try await withTestSystem { system in
            let notices = Recorder<String>()
            let target = system.spawn(Fragile())
            let watcher = system.spawn(Watcher(notices: notices))
            _ = try await watcher.ask { Watcher.Message.watch(target, $0) }
            watcher.stop()
            _ = await watcher.terminated()
            target.stop()
            _ = await target.terminated()
            #expect(notices.count == 0)
            #expect(system.deadLetters.total == 0, "notices are system messages: never dead letters")
        }
    }

    @Test func handlerActorsReceiveTerminatedAsAMessage() async throws {
        try await withTestSystem { system in
            let notices = Recorder<String>()
            let target = system.spawn(Fragile())
            let watcher = system.spawn(TypedWatcher(notices: notices))
            try await watcher.ask(WatchIt(target: target), returning: Void.self)
            target.stop()
            await waitUntil("notice") { notices.count == 1 }
            #expect(notices.values == ["stopped"])
        }
    }
}

struct WatchIt: Sendable { let target: ActorRef<Fragile.Message> }

struct TypedWatcher: HandlerActor {
    let notices: Recorder<String>
    func setup(_ on: inout MessageHandlers<TypedWatcher>) {
        on.void(WatchIt.self) { _, message, context in context.watch(message.target) }
        on.void(Terminated.self) { watcher, notice, _ in watcher.notices.append("\(notice.reason)") }
    }
}

struct Watcher: ActorDefinition {
    enum Message: Sendable {
        case watch(ActorRef<Fragile.Message>, Reply<Void>)
        case unwatch(ActorRef<Fragile.Message>, Reply<Void>)
        case unwatchNext(ActorRef<Fragile.Message>)
        case blockThenUnwatch(ActorRef<Fragile.Message>)
        case terminated(Terminated)
        case ping(Reply<Void>)
        case block
    }

    let notices: Recorder<String>
    var gate: Gate?

    init(notices: Recorder<String>, gate: Gate? = nil) {
        self.notices = notices
        self.gate = gate
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .watch(let target, let reply):
            context.watch(target) { .terminated($0) }
            reply.succeed()
        case .unwatch(let target, let reply):
            context.unwatch(target)
            reply.succeed()
        case .unwatchNext(let target):
            context.unwatch(target)
        case .blockThenUnwatch(let target):
            gate?.enter()
            context.unwatch(target)
        case .terminated(let notice):
            notices.append("\(notice.actor) \(notice.reason)")
        case .ping(let reply):
            reply.succeed()
        case .block:
            gate?.enter()
        }
    }
}

struct Nursery: ActorDefinition {
    enum Message: Sendable { case spawnChild(Reply<ActorRef<Fragile.Message>>) }
    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .spawnChild(let reply): reply.succeed(context.spawn(Fragile()))
        }
    }
}
