import Synchronization
import Testing
import Troupe
import TroupePromises
import TroupeTestSupport

struct Counter: ActorDefinition {
    enum Message: Sendable {
        case add(Int)
        case get(Reply<Int>)
        case ignore(Reply<Int>)
        case hold(Reply<Int>)
        case callback(PromiseCallback<Counter, Message>)
        case watch(Promise<Int>)
        case delivered(Result<Int, any Error>)
    }
    var total = 0
    var held: [Reply<Int>] = []

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .add(let n): total += n
        case .get(let reply): reply.succeed(total)
        case .ignore: break
        case .hold(let reply): held.append(reply)
        case .callback(let callback): callback.run(&self, context: context)
        case .watch(let promise):
            promise.then(on: context, via: Message.callback) { (counter: inout Counter, outcome, _) in
                counter.total += (try? outcome.get()) ?? -1000
            }
            promise.map { $0 * 100 }.deliver(to: context) { .delivered($0) }
        case .delivered(let outcome): total += (try? outcome.get()) ?? -1
        }
    }
}

struct Login: Sendable { let user: String }
struct Check: Sendable { let user: String }
struct CurrentUser: Sendable {}
struct Remember: Sendable { let promise: Promise<String> }

/// Answers `Check` with the user's name, upper-cased; refuses "mallory".
struct Auth: HandlerActor {
    func setup(_ on: inout MessageHandlers<Auth>) {
        // Answers with an error rather than throwing, which would stop the actor.
        on.future(Check.self, replying: String.self) { _, check, _, reply in
            if check.user == "mallory" { reply.fail(Boom(code: 13)) } else { reply.succeed(check.user.uppercased()) }
        }
    }
}

/// Redirects `Login` to `Auth` through a promise-returning future reaction; remembers the user
/// through an actor-delivered callback.
struct Session: HandlerActor {
    let auth: ActorRef<AnyMessage>
    var user = "nobody"

    func setup(_ on: inout MessageHandlers<Session>) {
        on.acceptPromiseCallbacks()
        on.future(Login.self) { session, login, context -> Promise<String> in
            let checked: Promise<String> = session.auth.askPromise(Check(user: login.user))
            checked.then(on: context) { (session: inout Session, outcome, _) in
                if case .success(let name) = outcome { session.user = name }
            }
            return checked.map { "welcome \($0)" }
        }
        on.result(CurrentUser.self) { session, _, _ in session.user }
        on.void(Remember.self) { _, remember, context in
            remember.promise.then(on: context) { (session: inout Session, outcome, _) in
                session.user = (try? outcome.get()) ?? "failed"
            }
        }
    }
}

/// Registers no promise callbacks: a callback sent to it is dropped, and counted.
struct Forgetful: HandlerActor {
    func setup(_ on: inout MessageHandlers<Forgetful>) {
        on.void(Remember.self) { _, remember, context in
            remember.promise.then(on: context) { (_: inout Forgetful, _, _) in }
        }
    }
}

@Suite struct AskPromiseTests {
    @Test func askPromiseAnswers() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter())
            counter.tell(.add(5))
            let promise = counter.askPromise { .get($0) }
            let got1 = try await promise.map { $0 + 1 }.get()
            #expect(got1 == 6)
        }
    }

    @Test func askPromiseFailsWithAskErrors() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter())
            let dropped = await counter.askPromise { .ignore($0) }.outcome
            #expect((dropped.failure as? AskError)?.kind == .noReply)
            let timedOut = await counter.askPromise(timeout: .milliseconds(20)) { .hold($0) }.outcome
            #expect((timedOut.failure as? AskError)?.kind == .timedOut)
            counter.stop()
            await waitUntil { counter.isStopped }
            let stopped = await counter.askPromise { .get($0) }.outcome
            #expect((stopped.failure as? AskError)?.kind == .recipientStopped)
        }
    }

    @Test func futureReactionReturningPromiseRedirectsToAnotherActor() async throws {
        try await withTestSystem { system in
            let auth = system.spawn(Auth())
            let session = system.spawn(Session(auth: auth))
            let welcome: String = try await session.ask(Login(user: "ada"))
            #expect(welcome == "welcome ADA")
            // The callback registered on the actor ran on the actor and changed its state.
            await eventually(session, is: "ADA")
            let refused = await askResult { () async throws -> String in try await session.ask(Login(user: "mallory")) }
            // Redirected through a promise, the other actor's error arrives wrapped once.
            guard case .failed(let inner)? = refused.askError else {
                Issue.record("expected .failed(Boom), got \(refused)"); return
            }
            #expect(isBoom(inner, 13))
            #expect(refused.askError.map { isBoom($0.rootCause, 13) } == true)
            let viaPromise: Promise<String> = session.askPromise(Login(user: "bob"))
            let got2 = try await viaPromise.get()
            #expect(got2 == "welcome BOB")
        }
    }
}

/// Polls the session's current user until it is `expected` (records an issue after 20 s).
func eventually(
    _ session: ActorRef<AnyMessage>, is expected: String, sourceLocation: SourceLocation = #_sourceLocation
) async {
    let deadline = ContinuousClock.now + .seconds(20)
    var last = ""
    while ContinuousClock.now < deadline {
        last = (try? await session.ask(CurrentUser(), returning: String.self)) ?? "<ask failed>"
        if last == expected { return }
        try? await Task.sleep(for: .milliseconds(2))
    }
    Issue.record("user is \(last), expected \(expected)", sourceLocation: sourceLocation)
}

@Suite struct ActorCallbackTests {
    @Test func callbacksDeliveredToDefinitionActorRunOnIt() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter())
            let promise = Promise<Int>()
            counter.tell(.watch(promise))
            TestThreads.detach { promise.succeed(3) }
            // +3 through `then(on:via:)`, +300 through `deliver(to:)`.
            await waitUntil { ((try? await_get(counter)) ?? 0) == 303 }
        }
    }

    @Test func handlerActorCallbackRunsOnActorEvenWhenCompletedElsewhere() async throws {
        try await withTestSystem { system in
            let auth = system.spawn(Auth())
            let session = system.spawn(Session(auth: auth))
            let promise = Promise<String>()
            session.tell(Remember(promise: promise))
            let got3 = try await session.ask(CurrentUser(), returning: String.self)
            #expect(got3 == "nobody")
            await TestThreads.run(count: 1) { _ in promise.succeed("eve") }
            await eventually(session, is: "eve")
        }
    }

    @Test func callbackToActorWithoutAcceptanceIsCountedAsDropped() async throws {
        try await withTestSystem { system in
            // The counters are process-wide and other suites run in parallel: observe the
            // events instead, and keep only this test's (no other test spawns a `Forgetful`).
            let dropped = Recorder<PromiseEvent>()
            let observation = PromiseDiagnostics.addObserver { event in
                if event == .droppedActorCallback(actorType: "Forgetful") { dropped.append(event) }
            }
            defer { observation.cancel() }
            let forgetful = system.spawn(Forgetful())
            let promise = Promise<String>()
            _ = try await forgetful.ask(Remember(promise: promise), returning: Void.self)
            promise.succeed("x")
            await waitUntil("the dropped callback is reported") { dropped.count >= 1 }
            #expect(dropped.count == 1, "one callback, dropped once")
        }
    }
}

/// The counter's total via a blocking ask on a fresh thread (usable inside `waitUntil`).
func await_get(_ counter: ActorRef<Counter.Message>) throws -> Int {
    let box = Mutex<Result<Int, AskError>?>(nil)
    let thread = TestThreads.start {
        let result = Result { () throws(AskError) -> Int in try counter.askBlocking { .get($0) } }
        box.withLock { $0 = result }
    }
    TestThreads.join(thread)
    return try box.withLock { $0! }.get()
}

@Suite struct ExecutorAndPluginTests {
    @Test func pluginInstallsWorkerExecutorAndMetrics() async throws {
        let system = try ActorSystem.build(configuration: .init(workerCount: 2, pinWorkers: false, logger: quietLogger))
        { builder in
            try builder.plugin(PromisesPlugin())
        }
        #expect(system.installedPlugins.map(\.name).contains("troupe.promises"))
        let executor = try system.promiseExecutor()
        let probe = system.spawn(Counter())
        // askBlocking refuses to block a Troupe worker: the callback ran on one.
        let onWorker = Promise<Bool>()
        Promise(value: 1).whenComplete(on: executor) { _ in
            let refused = Result { () throws(AskError) -> Int in try probe.askBlocking { .get($0) } }
            onWorker.succeed((refused.failure)?.kind == .blockingOnWorkerThread)
        }
        #expect(try await onWorker.get())
        let tripled = try await Promise(value: 2).map(on: executor) { $0 * 3 }.get()
        #expect(tripled == 6)

        let metrics = try #require(system.promiseMetrics)
        // The metrics see every system's promises (other suites run in parallel), so the exact
        // count is taken from this test's own value type.
        let doubles = Recorder<PromiseEvent>()
        let observation = PromiseDiagnostics.addObserver { event in
            if event == .doubleCompletion(valueType: "DoubleCompletionProbe") { doubles.append(event) }
        }
        defer { observation.cancel() }
        let metricsBefore = metrics.doubleCompletions
        let twice = Promise<DoubleCompletionProbe>()
        #expect(twice.succeed(DoubleCompletionProbe()))
        #expect(!twice.succeed(DoubleCompletionProbe()), "the second completion is discarded")
        #expect(doubles.count == 1, "reported once, synchronously")
        #expect(metrics.doubleCompletions > metricsBefore, "and counted by the plugin's metrics")
        await system.shutdown()
    }

    @Test func withoutPluginThereIsNoExecutorOrMetrics() async throws {
        try await withTestSystem { system in
            #expect(throws: RegistryError.self) { try system.promiseExecutor() }
            #expect(system.promiseMetrics == nil)
            let own = try WorkerExecutor(system: system, size: 1)
            let got4 = try await Promise(value: 5).map(on: own) { $0 + 1 }.get()
            #expect(got4 == 6)
        }
    }

    @Test func inlineAndConcurrencyExecutors() async throws {
        let calls = Calls<Int>()
        Promise(value: 1).then(on: .inline, { calls.record($0) }, { _ in })
        #expect(calls.all == [1])
        let fromTask = Promise<Int>()
        Promise(value: 2).then(on: .concurrency, { fromTask.succeed($0) }, { fromTask.fail($0) })
        let got5 = try await fromTask.get()
        #expect(got5 == 2)
        let caught = Promise<Bool>()
        Promise<Int>(error: Boom()).catch(on: .concurrency) { caught.succeed(isBoom($0)) }
        #expect(try await caught.get())
    }
}

/// A value type only `pluginInstallsWorkerExecutorAndMetrics` completes twice.
struct DoubleCompletionProbe: Sendable {}
