import Synchronization
import Testing
@testable import Troupe
import TroupeTestSupport

/// `ask` (async, callback and blocking) and every `AskError` it can end with.
@Suite struct AskTests {
    @Test func askReturnsTheHandlersAnswer() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let answer = try await server.ask { AskServer.Message.double(21, $0) }
            #expect(answer == 42)
            let text = try await server.ask { AskServer.Message.echo("hi", $0) }
            #expect(text == "hi")
        }
    }

    @Test func callbackAskIsCalledExactlyOnceWithTheAnswer() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let results = Recorder<Result<Int, AskError>>()
            server.ask({ AskServer.Message.double(5, $0) }, onReply: { results.append($0) })
            await waitUntil("callback called") { results.count == 1 }
            // Another round trip through the same actor: no second callback turned up meanwhile.
            _ = try await server.ask { AskServer.Message.double(0, $0) }
            #expect(results.count == 1)
            #expect(results.values.first?.value == 10)
        }
    }

    /// A completed ask is not taken out of the timer's heap (the heap purges it later), so it
    /// must let go of its callback, and of what the callback captured, when it completes.
    @Test func aCompletedAskLetsGoOfWhatItsCallbackCapturedAtOnce() async throws {
        final class Captured: Sendable {}
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let results = Recorder<Result<Int, AskError>>()
            let weak: WeakBox<Captured>
            do {
                let captured = Captured()
                weak = WeakBox(captured)
                server.ask(timeout: .seconds(3_600), { AskServer.Message.double(4, $0) }) { result in
                    withExtendedLifetime(captured) { results.append(result) }
                }
            }
            await waitUntil("answered") { results.count == 1 }
            #expect(results.values.first?.value == 8)
            await waitUntil("the callback's capture is released") { weak.value == nil }
            #expect(weak.value == nil, "the completed ask still holds its callback")
        }
    }

    /// An actor's ask delivers the answer as a message, then lets go of the asker: the
    /// answered ask may stay in the timer's heap until it is purged, and must not keep the
    /// asking actor's cell alive meanwhile.
    @Test func anAnsweredActorAskDoesNotKeepTheAskerAlive() async throws {
        struct Asker: ActorDefinition {
            enum Message: Sendable { case go(ActorRef<AskServer.Message>), answer(Result<Int, AskError>) }
            let answers: Recorder<Int>
            func receive(_ message: Message, context: ActorContext<Message>) {
                switch message {
                case .go(let server):
                    context.ask(server, timeout: .seconds(3_600), { .double(21, $0) }, then: { .answer($0) })
                case .answer(let result):
                    answers.append((try? result.get()) ?? -1)
                    context.stop()
                }
            }
        }
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let answers = Recorder<Int>()
            let cell: WeakBox<AnyCell> = await {
                let asker = system.spawn(Asker(answers: answers))
                asker.tell(.go(server))
                _ = await asker.terminated()
                return WeakBox(asker.cell)
            }()
            #expect(answers.values == [42])
            await waitUntil("the asker's cell is freed") { cell.value == nil }
            #expect(cell.value == nil, "the answered ask still holds the asking actor")
        }
    }

    @Test func askWithoutAnswerTimesOutWithTheGivenDuration() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let result = await askResult {
                try await server.ask(timeout: .milliseconds(50)) { AskServer.Message.hold($0) }
            }
            guard case .failure(.timedOut(let after)) = result else {
                Issue.record("expected .timedOut, got \(result)")
                return
            }
            #expect(after == .milliseconds(50))
            // The reply still held by the actor: answering now is too late and says so.
            let late = try await server.ask { AskServer.Message.answerHeld(7, $0) }
            #expect(late == [false])
        }
    }

    @Test func askUsesTheSystemsDefaultTimeoutWhenNoneIsGiven() async throws {
        try await withTestSystem(askTimeout: .milliseconds(80)) { system in
            let server = system.spawn(AskServer())
            let result = await askResult { try await server.ask { AskServer.Message.hold($0) } }
            guard case .failure(.timedOut(let after)) = result else {
                Issue.record("expected .timedOut, got \(result)")
                return
            }
            #expect(after == .milliseconds(80))
        }
    }

    @Test func zeroTimeoutTimesOutWithoutAnAnswer() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let server = system.spawn(AskServer(gate: gate))
            server.tell(.block)
            await waitUntil("server blocked") { gate.entered == 1 }
            let result = await askResult { try await server.ask(timeout: .zero) { AskServer.Message.double(1, $0) } }
            gate.open()
            guard case .failure(.timedOut(let after)) = result else {
                Issue.record("expected .timedOut, got \(result)")
                return
            }
            #expect(after == .zero)
        }
    }

    @Test func askToAStoppedActorFailsWithRecipientStopped() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            server.stop()
            await waitUntil("stopped") { server.isStopped }
            // A long timeout: the failure must come from the stop, not from the timer.
            let result = await askResult {
                try await server.ask(timeout: .seconds(30)) { AskServer.Message.double(1, $0) }
            }
            #expect(result.askError?.kind == .recipientStopped)
            #expect(system.deadLetters.count(.recipientStopped) == 1)
        }
    }

    @Test func askQueuedBehindTheActorsStopFailsWithRecipientStopped() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let server = system.spawn(AskServer(gate: gate))
            server.tell(.block)
            await waitUntil("server blocked") { gate.entered == 1 }
            server.tell(.stopSelf)
            let results = Recorder<Result<Int, AskError>>()
            server.ask(timeout: .seconds(30), { AskServer.Message.double(1, $0) }, onReply: { results.append($0) })
            gate.open()
            await waitUntil("ask completed") { results.count == 1 }
            #expect(results.values.first?.askError?.kind == .recipientStopped)
            await waitUntil("dead letter counted") { system.deadLetters.count(.recipientStopped) == 1 }
        }
    }

    /// Cancelling the asking task ends its ask at once with `.cancelled` (the ask timeout is
    /// 60 s); the request stays sent, and its late answer is discarded. The same for a task on
    /// Swift's global executor and one on the system's task executor.
    @Test(arguments: [false, true])
    func cancellingTheAskingTaskEndsTheAskAtOnce(onTheWorkers: Bool) async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let asking = Task(executorPreference: onTheWorkers ? system.taskExecutor : nil) {
                await askResult { try await server.ask(timeout: .seconds(60)) { AskServer.Message.hold($0) } as Int }
            }
            var seen = 0
            while seen < 2 {
                seen = try await server.ask { AskServer.Message.requestsSeen($0) }
                if seen < 2 { try await Task.sleep(for: .milliseconds(1)) }
            }
            asking.cancel()
            let result = await asking.value
            #expect(result.askError?.kind == .cancelled)
            // The held reply is answered late: the answer is discarded (its Reply says so).
            let late = try await server.ask { AskServer.Message.answerHeld(5, $0) }
            #expect(late == [false], "the cancelled ask was already completed")
        }
    }

    @Test func anAskFromACancelledTaskSendsNothing() async throws {
        try await withTestSystem { system in
            let received = Recorder<Int>()
            let probe = system.spawn(Probe<Int>(received: received))
            let asking = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await askResult { try await probe.ask(timeout: .seconds(60)) { (_: Reply<Int>) in 1 } }
            }
            #expect(await asking.value.askError?.kind == .cancelled)
            probe.tell(2)
            await waitUntil("the later message arrived") { received.count >= 1 }
            #expect(received.values == [2], "the cancelled task's request was never sent")
        }
    }

    /// Many asks cancelled at random moments all end, each exactly once, with an answer or
    /// `.cancelled` (the race between the cancel handler and the continuation's installation).
    @Test func asksCancelledAtRandomMomentsAllEnd() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let outcomes = await withTaskGroup(of: AskErrorKind?.self) { group in
                for value in 0..<500 {
                    let task = Task {
                        await askResult {
                            try await server.ask(timeout: .seconds(60)) { AskServer.Message.double(value, $0) }
                        }
                    }
                    if value % 2 == 0 { task.cancel() }
                    group.addTask { await task.value.askError?.kind }
                }
                return await group.reduce(into: [AskErrorKind?]()) { $0.append($1) }
            }
            #expect(outcomes.count == 500)
            #expect(outcomes.allSatisfy { $0 == nil || $0 == .cancelled })
            #expect(outcomes.contains(nil))
        }
    }

    /// An error forwarded through several asks reaches the first asker wrapped once, and
    /// `rootCause` gives the handler's own error whatever the wrapping.
    @Test func anErrorForwardedThroughAsksIsWrappedOnce() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let inner = await askResult { try await server.ask { AskServer.Message.failWith("root", $0) } as Int }
            guard let innerError = inner.askError else { Issue.record("expected a failure"); return }
            // A forwarding actor fails its own Reply with the AskError it got.
            let forwarded = await askResult {
                try await server.ask { reply -> AskServer.Message in
                    reply.fail(innerError)
                    return .drop(reply)
                } as Int
            }
            guard case .failed(let error)? = forwarded.askError else { Issue.record("got \(forwarded)"); return }
            #expect(error as? TestError == TestError("root"))
            #expect(AskError.failed(AskError.failed(TestError("root"))).rootCause as? TestError == TestError("root"))
            #expect(AskError.noReply.rootCause is AskError)
        }
    }

    @Test func handlerDroppingTheReplyFailsWithNoReplyAtOnce() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            // 30 s timeout: returning at all (within the test's patience) means the drop, not
            // the timer, ended the ask.
            let result = await askResult {
                try await server.ask(timeout: .seconds(30)) { AskServer.Message.drop($0) } as Int
            }
            #expect(result.askError?.kind == .noReply)
        }
    }

    @Test func repliesDroppedInsideWithUnansweredRepliesFailingFailWithItsError() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let asks = (0..<3).map { _ in
                Task { await askResult { try await server.ask(timeout: .seconds(30)) { AskServer.Message.hold($0) } } }
            }
            for _ in 0..<20_000 where (try await server.ask { AskServer.Message.heldCount($0) }) < 3 {
                try await Task.sleep(for: .milliseconds(1))
            }
            server.tell(.dropHeld(outer: "store gone", inner: "inner reason"))
            var reasons: [String] = []
            for ask in asks {
                guard case .failed(let error)? = await ask.value.askError, let reason = error as? TestError else {
                    Issue.record("expected .failed(TestError)")
                    continue
                }
                reasons.append(reason.description)
            }
            #expect(
                reasons.sorted()
                    == [TestError("inner reason"), TestError("store gone"), TestError("store gone")].map(\.description)
                    .sorted())
            // Outside the scope a dropped reply is "no reply" again.
            let dropped = await askResult { try await server.ask { AskServer.Message.drop($0) } as Int }
            #expect(dropped.askError?.kind == .noReply)
        }
    }

    @Test func requestThatDoesNotCarryTheReplyFailsWithNoReply() async throws {
        try await withTestSystem { system in
            let received = Recorder<Int>()
            let probe = system.spawn(Probe<Int>(received: received))
            let result = await askResult { try await probe.ask(timeout: .seconds(30)) { (_: Reply<Int>) in 5 } }
            #expect(result.askError?.kind == .noReply)
            await waitUntil("message still delivered") { received.count == 1 }
        }
    }

    @Test func handlerAnsweringWithAnErrorFailsWithThatError() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let result = await askResult { try await server.ask { AskServer.Message.failWith("boom", $0) } as Int }
            guard case .failure(.failed(let error)) = result else {
                Issue.record("expected .failed, got \(result)")
                return
            }
            #expect((error as? TestError) == TestError("boom"))
            // The actor answered with an error; it did not fail, so it keeps working.
            let answer1 = try await server.ask { AskServer.Message.double(2, $0) }
            #expect(answer1 == 4)
        }
    }

    @Test func completeWithThrowingBodyFailsTheAsk() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let ok = try await server.ask { AskServer.Message.compute(3, $0) }
            #expect(ok == 9)
            let result = await askResult { try await server.ask { AskServer.Message.compute(-1, $0) } }
            guard case .failure(.failed(let error)) = result else {
                Issue.record("expected .failed, got \(result)")
                return
            }
            #expect((error as? TestError) == TestError("negative"))
        }
    }

    @Test func replyAnsweredLaterFromAnotherThreadReachesTheAsker() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let answer = try await server.ask { AskServer.Message.answerFromAnotherThread(11, $0) }
            #expect(answer == 11)
        }
    }

    @Test func secondCompletionIsIgnoredAndReported() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let answer = try await server.ask { AskServer.Message.answerTwice($0) }
            #expect(answer == 1, "the first completion wins")
            let log = try await server.ask { AskServer.Message.completionLog($0) }
            #expect(log == [true, false, false, true], "succeed, succeed again, fail, isCompleted")
        }
    }

    @Test func askToAFullBoundedMailboxIsUndeliverable() async throws {
        try await withTestSystem { system in
            for policy in [MailboxOverflowPolicy.fail, .dropNewest] {
                let gate = Gate()
                let server = system.spawn(
                    AskServer(gate: gate), options: SpawnOptions(mailbox: .bounded(capacity: 1, overflow: policy)))
                server.tell(.block)
                await waitUntil("server blocked") { gate.entered == 1 }
                #expect(server.tell(.double(0, nil)) == .enqueued)
                let result = await askResult {
                    try await server.ask(timeout: .seconds(30)) { AskServer.Message.double(1, $0) }
                }
                guard case .failure(.undeliverable(let reason)) = result else {
                    Issue.record("expected .undeliverable, got \(result)")
                    gate.open()
                    continue
                }
                #expect(reason == .mailboxFull(policy))
                gate.open()
            }
        }
    }

    @Test func askDroppedAsTheOldestOfAFullMailboxIsUndeliverable() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let server = system.spawn(
                AskServer(gate: gate), options: SpawnOptions(mailbox: .bounded(capacity: 1, overflow: .dropOldest)))
            server.tell(.block)
            await waitUntil("server blocked") { gate.entered == 1 }
            let results = Recorder<Result<Int, AskError>>()
            server.ask(timeout: .seconds(30), { AskServer.Message.double(1, $0) }, onReply: { results.append($0) })
            #expect(server.tell(.double(2, nil)) == .enqueuedDroppingOldest)
            gate.open()
            await waitUntil("the dropped ask completes") { results.count == 1 }
            guard case .failure(.undeliverable(let reason)) = results.values[0] else {
                Issue.record("expected .undeliverable, got \(results.values[0])")
                return
            }
            #expect(reason == .mailboxFull(.dropOldest))
        }
    }

    @Test func askBlockingFromAPlainThreadReturnsTheAnswer() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let result = await TestThreads.onNewThread {
                Result { () throws(AskError) -> Int in try server.askBlocking { AskServer.Message.double(8, $0) } }
            }
            #expect(result.value == 16)
        }
    }

    @Test func askBlockingFromAPlainThreadTimesOut() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let result = await TestThreads.onNewThread {
                Result { () throws(AskError) -> Int in
                    try server.askBlocking(timeout: .milliseconds(30)) { AskServer.Message.hold($0) }
                }
            }
            guard case .failure(.timedOut(let after)) = result else {
                Issue.record("expected .timedOut, got \(result)")
                return
            }
            #expect(after == .milliseconds(30))
        }
    }

    @Test func askBlockingInsideAHandlerFailsWithBlockingOnWorkerThread() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let caller = system.spawn(BlockingCaller(target: server))
            let result = try await caller.ask { BlockingCaller.Message.callBlocking($0) }
            #expect(result.askError?.kind == .blockingOnWorkerThread)
            // It failed at once, without sending: the server never saw a request.
            let seen = try await server.ask { AskServer.Message.requestsSeen($0) }
            #expect(seen == 1, "only this ask")
        }
    }

    /// Dedicated-thread actors exist for blocking code: `askBlocking` works there.
    @Test func askBlockingInsideADedicatedThreadHandlerReturnsTheAnswer() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let caller = system.spawn(BlockingCaller(target: server), options: SpawnOptions(executor: .dedicatedThread))
            let result = try await caller.ask { BlockingCaller.Message.callBlocking($0) }
            #expect(try result.get() == 2)
        }
    }

    /// ... except asking itself, which would wait for its own thread.
    @Test func aDedicatedActorAskingItselfBlockingFailsAtOnce() async throws {
        try await withTestSystem { system in
            let caller = system.spawn(SelfBlockingCaller(), options: SpawnOptions(executor: .dedicatedThread))
            let result = try await caller.ask { SelfBlockingCaller.Message.callSelf($0) }
            #expect(result.askError?.kind == .blockingOnWorkerThread)
        }
    }

    @Test func handlerThatThrowsWithoutAnsweringFailsTheAskAtOnce() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            let result = await askResult {
                try await server.ask(timeout: .seconds(30)) { AskServer.Message.throwHolding($0) }
            }
            // An ActorDefinition's handler threw while the reply was in its message: the asker
            // learns the error at once (.failed), not just that the reply was dropped.
            #expect(result.askError?.kind == .failed)
            await waitUntil("the failed actor stopped (default directive)") { server.isStopped }
        }
    }

    @Test func manyConcurrentAsksAreAllAnsweredCorrectly() async throws {
        try await withTestSystem { system in
            let servers = (0..<8).map { _ in system.spawn(AskServer()) }
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<2000 {
                    let server = servers[index % servers.count]
                    group.addTask { try await server.ask { AskServer.Message.double(index, $0) } == index * 2 }
                }
                var correct = 0
                for try await ok in group where ok { correct += 1 }
                #expect(correct == 2000)
            }
        }
    }

    @Test func askThrowsExactlyAskError() async throws {
        try await withTestSystem { system in
            let server = system.spawn(AskServer())
            // `do throws(AskError)` compiles only because `ask` throws exactly AskError.
            do throws(AskError) {
                _ = try await server.ask(timeout: .milliseconds(10)) { AskServer.Message.hold($0) }
                Issue.record("expected the ask to time out")
            } catch {
                let typed: AskError = error
                #expect(typed.kind == .timedOut)
            }
        }
    }

    /// A request that ignores its `Reply` fails with `.noReply` at once; if the envelope is
    /// dead-lettered later (here: the actor stops before reaching it, after the ask's timer
    /// entry is gone), the runtime must not touch the finished ask's freed state. Runs in a
    /// child process, since a use-after-free would crash it.
    @Test func deadLetteringARequestWhoseAskAlreadyEndedIsSafe() async {
        await #expect(processExitsWith: .success) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false, logger: quietLogger))
            let gate = Gate()
            let server = system.spawn(AskServer(gate: gate))
            server.tell(.block)
            while gate.entered == 0 { await Task.yield() }
            server.tell(.stopSelf)
            // Ignores the reply: .noReply now; the envelope stays queued behind `.stopSelf`.
            let first = await askResult {
                try await server.ask(timeout: .milliseconds(5)) { (_: Reply<Int>) in AskServer.Message.double(1, nil) }
            }
            precondition(first.askError?.kind == .noReply)
            // A later ask with a longer timeout times out after the first one's timer entry
            // fired (in an earlier timer wake-up) and released the first ask's state.
            let second = await askResult {
                try await server.ask(timeout: .milliseconds(100)) { AskServer.Message.hold($0) }
            }
            precondition(second.askError?.kind == .timedOut || second.askError?.kind == .recipientStopped)
            gate.open()
            // `.stopSelf` stops the actor; the ignored request is dead-lettered next.
            while system.deadLetters.total < 1 { await Task.yield() }
            await system.shutdown()
        }
    }

    @Test func askErrorsDescribeThemselves() {
        let errors: [AskError] = [
            .timedOut(after: .seconds(1)), .recipientStopped, .noReply, .undeliverable(.systemShutdown),
            .failed(TestError("x")), .typeMismatch(expected: "Int", actual: "String"), .blockingOnWorkerThread,
        ]
        let descriptions = errors.map(\.description)
        #expect(Set(descriptions).count == errors.count)
        #expect(descriptions.allSatisfy { !$0.isEmpty })
        #expect(descriptions[5].contains("Int") && descriptions[5].contains("String"))
    }
}

// MARK: - Test actors

struct TestError: Error, Equatable, Sendable, CustomStringConvertible {
    let text: String
    init(_ text: String) { self.text = text }
    var description: String { "TestError(\(text))" }
}

struct AskServer: ActorDefinition {
    enum Message: Sendable {
        case double(Int, Reply<Int>?)
        case echo(String, Reply<String>)
        case hold(Reply<Int>)
        case answerHeld(Int, Reply<[Bool]>)
        case drop(Reply<Int>)
        /// Drops the first held reply inside a scope failing with `inner`, nested in one failing
        /// with `outer` where the rest are dropped.
        case dropHeld(outer: String, inner: String)
        case heldCount(Reply<Int>)
        case failWith(String, Reply<Int>)
        case compute(Int, Reply<Int>)
        case answerFromAnotherThread(Int, Reply<Int>)
        case answerTwice(Reply<Int>)
        case completionLog(Reply<[Bool]>)
        case throwHolding(Reply<Int>)
        case requestsSeen(Reply<Int>)
        case block
        case stopSelf
    }

    var gate: Gate?
    var held: [Reply<Int>] = []
    var log: [Bool] = []
    var requests = 0

    init(gate: Gate? = nil) { self.gate = gate }

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        requests += 1
        switch message {
        case .double(let value, let reply): reply?.succeed(value * 2)
        case .echo(let text, let reply): reply.succeed(text)
        case .hold(let reply): held.append(reply)
        case .answerHeld(let value, let reply):
            reply.succeed(held.map { $0.succeed(value) })
        case .drop: break
        case .heldCount(let reply): reply.succeed(held.count)
        case .dropHeld(let outer, let inner):
            withUnansweredRepliesFailing(with: TestError(outer)) {
                withUnansweredRepliesFailing(with: TestError(inner)) { _ = held.removeFirst() }
                held.removeAll()
            }
        case .failWith(let text, let reply): reply.fail(TestError(text))
        case .compute(let value, let reply):
            reply.complete {
                guard value >= 0 else { throw TestError("negative") }
                return value * value
            }
        case .answerFromAnotherThread(let value, let reply):
            TestThreads.detach { reply.succeed(value) }
        case .answerTwice(let reply):
            log.append(reply.succeed(1))
            log.append(reply.succeed(2))
            log.append(reply.fail(TestError("late")))
            log.append(reply.isCompleted)
        case .completionLog(let reply): reply.succeed(log)
        case .throwHolding:
            throw TestError("handler failed")
        case .requestsSeen(let reply): reply.succeed(requests)
        case .block: gate?.enter()
        case .stopSelf: context.stop()
        }
    }
}

/// Calls `askBlocking` from inside its own handler and reports what happened.
struct BlockingCaller: ActorDefinition {
    enum Message: Sendable { case callBlocking(Reply<Result<Int, AskError>>) }
    let target: ActorRef<AskServer.Message>

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .callBlocking(let reply):
            reply.succeed(
                Result { () throws(AskError) -> Int in
                    try target.askBlocking(timeout: .seconds(30)) { AskServer.Message.double(1, $0) }
                })
        }
    }
}

/// A dedicated-thread actor that asks itself with `askBlocking`.
struct SelfBlockingCaller: ActorDefinition {
    enum Message: Sendable {
        case callSelf(Reply<Result<Int, AskError>>)
        case answer(Reply<Int>)
    }

    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .callSelf(let reply):
            let me = context.ref
            reply.succeed(
                Result { () throws(AskError) -> Int in
                    try me.askBlocking(timeout: .seconds(30)) { Message.answer($0) }
                })
        case .answer(let reply): reply.succeed(1)
        }
    }
}
