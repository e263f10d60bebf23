import Testing
import Troupe
import TroupeTestSupport

/// Refs and pools of both actor kinds (enum-message definitions and per-type handler actors)
/// offer the same ways to ask: await, callback, blocking, from inside an actor, all members.
@Suite struct AskingFormsTests {
    struct Doubler: HandlerActor {
        struct Double: Sendable { let value: Int }
        struct Divide: Sendable { let value: Int; let by: Int }
        struct DivisionByZero: Error, Equatable {}
        var answered = 0
        func setup(_ on: inout MessageHandlers<Doubler>) {
            on.result(Double.self) { actor, message, _ in
                actor.answered += 1
                return message.value * 2
            }
            // Answers with an error without failing the actor.
            on.result(Divide.self) { actor, message, _ -> Result<Int, any Error> in
                guard message.by != 0 else { return .failure(DivisionByZero()) }
                actor.answered += 1
                return .success(message.value / message.by)
            }
            on.result(Count.self) { actor, _, _ in actor.answered }
        }
        struct Count: Sendable {}
    }

    @Test func aHandlerActorCanBeAskedWithACallback() async throws {
        try await withTestSystem { system in
            let doubler = system.spawn(Doubler())
            let answers = Recorder<Result<Int, AskError>>()
            doubler.ask(Doubler.Double(value: 21), returning: Int.self) { answers.append($0) }
            await waitUntil("answered") { answers.count == 1 }
            #expect((try? answers.values[0].get()) == 42)
        }
    }

    @Test func aResultReactionCanAnswerWithAnErrorWithoutFailingTheActor() async throws {
        try await withTestSystem { system in
            let doubler = system.spawn(Doubler())
            let failed = await askResult { () async throws -> Int in
                try await doubler.ask(Doubler.Divide(value: 1, by: 0))
            }
            guard case .failed(let error)? = failed.askError else { Issue.record("got \(failed)"); return }
            #expect(error as? Doubler.DivisionByZero == Doubler.DivisionByZero())
            let quotient: Int = try await doubler.ask(Doubler.Divide(value: 9, by: 3))
            #expect(quotient == 3)
            let count: Int = try await doubler.ask(Doubler.Count())
            #expect(count == 1, "the actor kept its state: it did not fail or restart")
            #expect(system.deadLetters.total == 0)
        }
    }

    /// An actor asks a handler actor from its handler, without a Task.
    struct Asker: ActorDefinition {
        enum Message: Sendable {
            case start(ActorRef<AnyMessage>)
            case answered(Result<Int, AskError>)
        }
        let results: Recorder<Result<Int, AskError>>
        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .start(let target):
                context.ask(target, Doubler.Double(value: 5), returning: Int.self) { .answered($0) }
            case .answered(let result):
                results.append(result)
            }
        }
    }

    @Test func anActorAsksAHandlerActorThroughItsContext() async throws {
        try await withTestSystem { system in
            let doubler = system.spawn(Doubler())
            let results = Recorder<Result<Int, AskError>>()
            system.spawn(Asker(results: results)).tell(.start(doubler))
            await waitUntil("answered") { results.count == 1 }
            #expect((try? results.values[0].get()) == 10)
        }
    }

    @Test func aHandlerActorPoolOffersEveryFormOfAsk() async throws {
        try await withTestSystem { system in
            let pool = try system.spawnPool(size: 3) { _ in Doubler() }
            let awaited: Int = try await pool.ask(Doubler.Double(value: 1))
            #expect(awaited == 2)
            let answers = Recorder<Result<Int, AskError>>()
            pool.ask(Doubler.Double(value: 2), returning: Int.self) { answers.append($0) }
            await waitUntil("callback") { answers.count == 1 }
            #expect((try? answers.values[0].get()) == 4)
            let all = await pool.askAll(Doubler.Double(value: 3), returning: Int.self)
            #expect(all.map { try? $0.get() } == [6, 6, 6])
            let counts = await pool.askAll(Doubler.Count(), returning: Int.self)
            #expect(counts.compactMap { try? $0.get() }.reduce(0, +) == 5, "three asks + one per member of askAll")
        }
    }
}

/// Asks whose outcome is a value keep the typed error without annotating a closure (Swift 6
/// infers `throws(any Error)` for a closure around `try await ask`).
@Suite struct AskResultFormTests {
    @Test func askResultKeepsTheTypedErrorWithoutAnnotations() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let doubled = await server.askResult { .double(21, $0) }
            #expect((try? doubled.get()) == 42)
            let dropped: Result<Int, AskError> = await server.askResult { .drop($0) }
            #expect(dropped.askError?.kind == .noReply)
            let handlers = system.spawn(AskingFormsTests.Doubler())
            let viaHandler = await handlers.askResult(AskingFormsTests.Doubler.Double(value: 4), returning: Int.self)
            #expect((try? viaHandler.get()) == 8)
            let pool = try system.spawnPool(size: 2) { _ in AskServer() }
            let fromPool = await pool.askResult { .double(5, $0) }
            #expect((try? fromPool.get()) == 10)
            let blocking = await TestThreads.onNewThread { server.askBlockingResult { .double(3, $0) } }
            #expect((try? blocking.get()) == 6)
        }
    }
}
