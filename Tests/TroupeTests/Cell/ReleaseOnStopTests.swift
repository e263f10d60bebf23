import Testing
import Troupe
import TroupeTestSupport

/// When an actor stops, for any reason, its instance is released on its own thread right after
/// `stopped` runs: every `Reply` it kept in its state fails its ask at once with
/// `.recipientStopped`, and a stopped actor that still has refs keeps none of its state.
@Suite struct ReleaseOnStopTests {
    /// Frees into `freed` when the instance that holds it goes.
    final class StateCanary: Sendable {
        let freed: Recorder<String>
        init(_ freed: Recorder<String>) { self.freed = freed }
        deinit { freed.append("state freed") }
    }

    /// Keeps every request's `Reply` in a pending table (the future-reaction pattern) and never
    /// answers; `.fail` throws, `.spawnChild` spawns a child of the same kind.
    struct Keeper: ActorDefinition {
        enum Message: Sendable {
            case hold(Reply<Int>)
            case fail
            case stop
            case spawnChild(Reply<ActorRef<Message>>)
        }
        struct Failure: Error {}
        let canary: StateCanary
        var pending: [Reply<Int>] = []

        mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
            switch message {
            case .hold(let reply): pending.append(reply)
            case .fail: throw Failure()
            case .stop: context.stop()
            case .spawnChild(let reply): reply.succeed(context.spawn(Keeper(canary: StateCanary(canary.freed))))
            }
        }

        func stopped(context: ActorContext<Message>) {
            canary.freed.append("stopped ran")
        }
    }

    /// Sends two held asks, then stops the actor with `stop`, and checks that both asks fail at
    /// once with `.recipientStopped` and that the state was freed after `stopped` ran, while
    /// the test still holds the ref.
    func expectReleased(
        _ system: ActorSystem, _ keeper: ActorRef<Keeper.Message>, freed: Recorder<String>,
        sourceLocation: SourceLocation = #_sourceLocation,
        stop: () async -> Void
    ) async {
        let outcomes = Recorder<AskErrorKind?>()
        for _ in 0..<2 {
            keeper.ask(timeout: .seconds(60), { .hold($0) }) { (result: Result<Int, AskError>) in
                outcomes.append(result.askError?.kind)
            }
        }
        await stop()
        await waitUntil("both asks ended", sourceLocation: sourceLocation) { outcomes.count == 2 }
        #expect(outcomes.values == [.recipientStopped, .recipientStopped], sourceLocation: sourceLocation)
        await waitUntil("the instance was released", sourceLocation: sourceLocation) {
            freed.values.contains("state freed")
        }
        #expect(Array(freed.values.prefix(2)) == ["stopped ran", "state freed"], sourceLocation: sourceLocation)
        withExtendedLifetime(keeper) {}
    }

    @Test func stopReleasesTheInstance() async throws {
        try await withTestSystem { system in
            let freed = Recorder<String>()
            let keeper = system.spawn(Keeper(canary: StateCanary(freed)))
            await expectReleased(system, keeper, freed: freed) { keeper.stop() }
        }
    }

    @Test func stoppingFromAHandlerReleasesTheInstance() async throws {
        try await withTestSystem { system in
            let freed = Recorder<String>()
            let keeper = system.spawn(Keeper(canary: StateCanary(freed)))
            await expectReleased(system, keeper, freed: freed) { keeper.tell(.stop) }
        }
    }

    @Test func aStopDecisionReleasesTheInstance() async throws {
        try await withTestSystem(failureDecider: { _ in .stop }) { system in
            let freed = Recorder<String>()
            let keeper = system.spawn(Keeper(canary: StateCanary(freed)))
            await expectReleased(system, keeper, freed: freed) { keeper.tell(.fail) }
        }
    }

    @Test func aStoppedParentReleasesItsChildsInstance() async throws {
        try await withTestSystem { system in
            let parentFreed = Recorder<String>()
            let parent = system.spawn(Keeper(canary: StateCanary(parentFreed)))
            let child = try await parent.ask { .spawnChild($0) }
            // The child's canary shares the parent's recorder; wait for the child's own entries.
            let outcomes = Recorder<AskErrorKind?>()
            child.ask(timeout: .seconds(60), { .hold($0) }) { (result: Result<Int, AskError>) in
                outcomes.append(result.askError?.kind)
            }
            parent.stop()
            await waitUntil("the child's ask ended") { outcomes.count == 1 }
            #expect(outcomes.values == [.recipientStopped])
            await waitUntil("both instances released") { parentFreed.values.filter { $0 == "state freed" }.count == 2 }
            #expect(child.isStopped)
        }
    }

    @Test func shutdownReleasesTheInstance() async throws {
        let system = makeTestSystem()
        let freed = Recorder<String>()
        let keeper = system.spawn(Keeper(canary: StateCanary(freed)))
        await expectReleased(system, keeper, freed: freed) { await system.shutdown() }
    }

    @Test func selfInvalidationReleasesTheInstance() async throws {
        try await withTestSystem { system in
            let freed = Recorder<String>()
            let outcomes = Recorder<AskErrorKind?>()
            do {
                let keeper = system.spawn(
                    Keeper(canary: StateCanary(freed)), options: SpawnOptions(selfInvalidating: true))
                keeper.ask(timeout: .seconds(60), { .hold($0) }) { (result: Result<Int, AskError>) in
                    outcomes.append(result.askError?.kind)
                }
            }
            await waitUntil("the ask ended") { outcomes.count == 1 }
            #expect(outcomes.values == [.recipientStopped])
            await waitUntil("the instance was released") { freed.values == ["stopped ran", "state freed"] }
        }
    }

    /// The handler-actor form: a `future` reaction's reply kept in state.
    struct HandlerKeeper: HandlerActor {
        struct Hold: Sendable {}
        struct Quit: Sendable {}
        let canary: StateCanary
        var pending: [Reply<String>] = []
        func setup(_ on: inout MessageHandlers<HandlerKeeper>) {
            on.future(Hold.self, replying: String.self) { actor, _, _, reply in actor.pending.append(reply) }
            on.void(Quit.self) { _, _, context in context.stop() }
        }
    }

    @Test func aHandlerActorsKeptFutureReplyFailsAtOnceWhenItStops() async throws {
        try await withTestSystem { system in
            let freed = Recorder<String>()
            let keeper = system.spawn(HandlerKeeper(canary: StateCanary(freed)))
            async let answer = askResult { () async throws -> String in
                try await keeper.ask(HandlerKeeper.Hold(), timeout: .seconds(60))
            }
            await waitUntil("the request is held") { keeper.isMailboxEmpty }
            try await Task.sleep(for: .milliseconds(20))
            keeper.tell(HandlerKeeper.Quit())
            #expect(await answer.askError?.kind == .recipientStopped)
            #expect(freed.values == ["state freed"])
        }
    }
}
