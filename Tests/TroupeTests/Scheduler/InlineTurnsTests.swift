import CTroupe
import Synchronization
import Testing
import TroupeTestSupport

@testable import Troupe

#if canImport(Glibc)
    import Glibc
#endif

/// Records, for each message, the thread that handled it (and the value, in order).
private struct ThreadRecorder: ActorDefinition {
    enum Message: Sendable {
        case note(Int)
        case askOther(ActorRef<Counter.Message>, Recorder<String>)
    }
    let seen: Recorder<(value: Int, thread: UInt, onWorker: Bool)>

    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .note(let value):
            seen.append((value, UInt(pthread_self()), CTroupe_current_worker() != nil))
        case .askOther(let other, let answers):
            do {
                _ = try other.askBlocking(timeout: .seconds(20)) { .get($0) }
                answers.append("answered")
            } catch {
                answers.append("\(error)")
            }
        }
    }
}

/// A native actor on a Troupe serial executor that reports the thread its method ran on.
private actor InlineThreadReporter {
    private let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    init(executor: TroupeSerialExecutor) { self.executor = executor }
    func thread() -> UInt { UInt(pthread_self()) }
}

/// Waits until `actors` have run their first turn and every worker is idle: only then does a
/// tell find an actor's mailbox empty and win its scheduling right (a worker still running the
/// spawn's turn keeps it; TSan's slowdown showed that). The warm-up notes are forgotten.
private func settle(
    _ system: ActorSystem, _ actors: [ActorRef<ThreadRecorder.Message>],
    _ seen: Recorder<(value: Int, thread: UInt, onWorker: Bool)>
) async {
    for actor in actors { _ = actor.tell(.note(-1)) }
    await waitUntil("warm-up handled") { seen.count == actors.count }
    await waitUntil("workers idle") { system.busyWorkerCount == 0 }
    seen.removeAll()
}

@Suite("runningTurnsHere: caller-runs turns on a thread outside the workers")
struct InlineTurnsTests {
    @Test func aTellToAnIdleActorIsHandledOnTheCallingThreadBeforeTheScopeReturns() async throws {
        try await withTestSystem { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let actor = system.spawn(ThreadRecorder(seen: seen))
            await settle(system, [actor], seen)
            let outcome = await TestThreads.onNewThread { () -> (UInt, Int, UInt?, Bool?) in
                let me = UInt(pthread_self())
                system.runningTurnsHere { _ = actor.tell(.note(1)) }
                // Handled already, here: no waiting.
                return (me, seen.count, seen.values.first?.thread, seen.values.first?.onWorker)
            }
            #expect(outcome.1 == 1, "the message was handled before runningTurnsHere returned")
            #expect(outcome.2 == outcome.0, "on the calling thread")
            #expect(outcome.3 == false)
        }
    }

    @Test func handlersRunInAScopeCountInTheSnapshotsHandlersStarted() async throws {
        try await withTestSystem { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let actors = (0..<3).map { _ in system.spawn(ThreadRecorder(seen: seen)) }
            await settle(system, actors, seen)
            let before = system.snapshot()
            let onThisThread = await TestThreads.onNewThread { () -> Int in
                system.runningTurnsHere { for (index, actor) in actors.enumerated() { _ = actor.tell(.note(index)) } }
                return seen.values.filter { !$0.onWorker }.count
            }
            #expect(onThisThread == 3, "the three turns ran on the scope's thread")
            let after = system.snapshot()
            #expect(after.handlersStartedOffWorkers - before.handlersStartedOffWorkers == 3)
            #expect(
                after.handlersStarted - before.handlersStarted >= 3,
                "the total counts them with the workers' own (\(before.handlersStarted) then \(after.handlersStarted))")
        }
    }

    @Test func withoutTheScopeTheWorkersHandleIt() async throws {
        try await withTestSystem { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let actor = system.spawn(ThreadRecorder(seen: seen))
            let caller = await TestThreads.onNewThread { () -> UInt in
                actor.tell(.note(1))
                return UInt(pthread_self())
            }
            await waitUntil("handled") { seen.count == 1 }
            #expect(seen.values[0].thread != caller)
            #expect(seen.values[0].onWorker)
        }
    }

    @Test func oneTurnRunsHereAndWhatItLeavesGoesToTheWorkersInOrder() async throws {
        try await withTestSystem(batchSize: 2) { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let actor = system.spawn(ThreadRecorder(seen: seen))
            await settle(system, [actor], seen)
            let caller = await TestThreads.onNewThread { () -> UInt in
                system.runningTurnsHere { for value in 0..<7 { actor.tell(.note(value)) } }
                return UInt(pthread_self())
            }
            await waitUntil("all handled") { seen.count == 7 }
            let values = seen.values
            #expect(values.map(\.value) == Array(0..<7), "one actor's messages stay in order")
            #expect(values.prefix(2).allSatisfy { $0.thread == caller }, "the first turn (batch of 2) ran here")
            #expect(values.dropFirst(2).allSatisfy { $0.onWorker }, "the rest ran on the workers")
        }
    }

    @Test func turnsBeyondTheLimitGoToTheWorkers() async throws {
        try await withTestSystem { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let actors = (0..<4).map { _ in system.spawn(ThreadRecorder(seen: seen)) }
            await settle(system, actors, seen)
            let caller = await TestThreads.onNewThread { () -> UInt in
                system.runningTurnsHere(maximumTurns: 2) {
                    for (index, actor) in actors.enumerated() { actor.tell(.note(index)) }
                }
                return UInt(pthread_self())
            }
            await waitUntil("all handled") { seen.count == 4 }
            let here = seen.values.filter { $0.thread == caller }.map(\.value).sorted()
            #expect(here == [0, 1], "the first two captured ran here, the others on the workers")
            #expect(seen.values.filter { $0.onWorker }.map(\.value).sorted() == [2, 3])
        }
    }

    @Test func aZeroLimitRunsNothingHere() async throws {
        try await withTestSystem { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let actor = system.spawn(ThreadRecorder(seen: seen))
            await TestThreads.run(count: 1) { _ in system.runningTurnsHere(maximumTurns: 0) { _ = actor.tell(.note(1)) }
            }
            await waitUntil("handled") { seen.count == 1 }
            #expect(seen.values[0].onWorker)
        }
    }

    @Test func aTaskOnTheTaskExecutorAndASerialExecutorsJobRunHere() async throws {
        try await withTestSystem { system in
            let reporter = InlineThreadReporter(executor: system.makeSerialExecutor())
            _ = await reporter.thread()
            await waitUntil("workers idle") { system.busyWorkerCount == 0 }
            let result = await TestThreads.onNewThread {
                () -> (caller: UInt, task: UInt?, actor: UInt?, doneInScope: Bool) in
                let taskThread = Recorder<UInt>()
                let actorThread = Recorder<UInt>()
                _ = system.runningTurnsHere {
                    Task(executorPreference: system.taskExecutor) {
                        taskThread.append(UInt(pthread_self()))
                        actorThread.append(await reporter.thread())
                    }
                }
                return (UInt(pthread_self()), taskThread.values.first, actorThread.values.first, actorThread.count == 1)
            }
            #expect(result.doneInScope, "the task ran to its end inside the scope")
            #expect(result.task == result.caller)
            #expect(result.actor == result.caller, "the actor's method too")
        }
    }

    @Test func aBlockingAskInTheBodyHandsTheScopesCellsToTheWorkersFirst() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter(total: 41))
            let answer = await TestThreads.onNewThread { () -> Int? in
                system.runningTurnsHere {
                    _ = counter.tell(.add(1))  // captured: the counter's scheduling right is this scope's
                    return try? counter.askBlocking(timeout: .seconds(20)) { .get($0) }
                }
            }
            #expect(answer == 42, "no deadlock: the captured counter went to a worker before the wait")
        }
    }

    @Test func aBlockingAskFromAHandlerRunningHereIsRefused() async throws {
        try await withTestSystem { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let asker = system.spawn(ThreadRecorder(seen: seen))
            let counter = system.spawn(Counter())
            let answer = Recorder<String>()
            await TestThreads.run(count: 1) { _ in
                system.runningTurnsHere {
                    _ = asker.tell(.askOther(counter, answer))
                }
            }
            await waitUntil("answered") { answer.count == 1 }
            #expect(answer.values == ["\(AskError.blockingOnWorkerThread)"])
        }
    }

    @Test func whenTheBodyThrowsTheCapturedActorsStillRun() async throws {
        struct Oops: Error {}
        try await withTestSystem { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let actor = system.spawn(ThreadRecorder(seen: seen))
            await TestThreads.run(count: 1) { _ in
                #expect(throws: Oops.self) {
                    try system.runningTurnsHere {
                        _ = actor.tell(.note(1))
                        throw Oops()
                    }
                }
            }
            await waitUntil("handled") { seen.count == 1 }
            #expect(seen.values[0].onWorker)
        }
    }

    @Test func onAWorkerOrInsideAnotherScopeTheBodyJustRuns() async throws {
        try await withTestSystem { system in
            let seen = Recorder<(value: Int, thread: UInt, onWorker: Bool)>()
            let actor = system.spawn(ThreadRecorder(seen: seen))
            // Inside a handler (a worker): no trap, the worker runs the actor next.
            let runner = system.spawn(ClosureActor())
            let onWorker = try await runner.ask { ClosureActor.Message.run({ system.runningTurnsHere { 7 } }, $0) }
            #expect(onWorker == 7)
            await settle(system, [actor], seen)
            // Nested: the outer scope runs the turn, after its body.
            let nested = await TestThreads.onNewThread { () -> (inner: Int, outer: Int) in
                var inner = -1
                system.runningTurnsHere {
                    system.runningTurnsHere { _ = actor.tell(.note(1)) }
                    inner = seen.count
                }
                return (inner, seen.count)
            }
            #expect(nested.inner == 0, "the inner scope does not run the turn")
            #expect(nested.outer == 1, "the outer one does")
        }
    }
}

/// Runs a closure in its handler and answers with its result.
private struct ClosureActor: ActorDefinition {
    enum Message: Sendable { case run(@Sendable () -> Int, Reply<Int>) }
    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .run(let body, let reply): reply.succeed(body())
        }
    }
}
