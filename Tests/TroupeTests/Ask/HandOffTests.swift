import CTroupe
import Synchronization
import Testing
import TroupeTestSupport

@testable import Troupe

private func currentThread() -> UInt { TestThreads.currentID }

/// How deep turns in place nest on the calling worker thread now (0 off the workers).
private func handOffDepthHere() -> Int {
    guard let raw = CTroupe_current_worker() else { return 0 }
    return Unmanaged<Worker>.fromOpaque(raw).takeUnretainedValue().handOffDepth
}

/// Answers with the thread its handler ran on; keeps or drops replies on request.
private struct Where: ActorDefinition {
    enum Message: Sendable {
        case thread(Reply<UInt>)
        case record(Int)
        case recorded(Reply<[Int]>)
        case keep(Reply<UInt>)
        case drop(Reply<UInt>)
        case fail(Reply<UInt>)
        case answerLater(Reply<UInt>)
        case wide(Reply<Wide>)
        case aligned(Reply<Int128>)
    }
    struct Failure: Error {}
    var recorded: [Int] = []
    var kept: [Reply<UInt>] = []

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .thread(let reply): reply.succeed(currentThread())
        case .record(let value): recorded.append(value)
        case .recorded(let reply): reply.succeed(recorded)
        case .keep(let reply): kept.append(reply)
        case .drop: break
        case .fail: throw Failure()
        case .answerLater(let reply):
            // Answered by another thread, a moment after this turn.
            TestThreads.detach { reply.succeed(7) }
        case .wide(let reply): reply.succeed(Wide())
        case .aligned(let reply): reply.succeed(Int128(1) << 100)
        }
    }
}

/// A result too large for an ask state's deposit room (never handed off).
struct Wide: Sendable, Equatable {
    var words: (Int, Int, Int, Int, Int, Int, Int, Int) = (1, 2, 3, 4, 5, 6, 7, 8)
    static func == (a: Wide, b: Wide) -> Bool { a.words.0 == b.words.0 && a.words.7 == b.words.7 }
}

/// Asks the next link of a chain with `context.ask`, and reports the deepest nesting of turns
/// in place seen along the chain.
private struct Link: ActorDefinition {
    enum Message: Sendable {
        case go(depthSeen: Int, Reply<Int>)
        case answered(Result<Int, AskError>, Reply<Int>)
    }
    let next: ActorRef<Message>?

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .go(let seen, let reply):
            let depth = max(seen, handOffDepthHere())
            guard let next else {
                reply.succeed(depth)
                return
            }
            context.ask(next, { .go(depthSeen: depth, $0) }, then: { .answered($0, reply) })
        case .answered(let result, let reply):
            reply.complete { try result.get() }
        }
    }
}

/// Asks a target with `context.ask` and keeps the thread of its own turn and the answer.
private struct Asker: ActorDefinition {
    enum Message: Sendable {
        case ask(ActorRef<Where.Message>, Reply<(UInt, UInt)>)
        case answered(UInt, Result<UInt, AskError>, Reply<(UInt, UInt)>)
        case askSelf(Reply<Bool>)
        case selfAsked(Reply<Bool>)
        case selfAnswered(Result<Bool, AskError>, Reply<Bool>)
        case spawnAndAsk(Reply<(UInt, UInt)>)
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .ask(let target, let reply):
            let mine = currentThread()
            context.ask(target, { .thread($0) }, then: { .answered(mine, $0, reply) })
        case .answered(let mine, let result, let reply):
            reply.complete { (mine, try result.get()) }
        case .askSelf(let reply):
            context.ask(context.ref, { .selfAsked($0) }, then: { .selfAnswered($0, reply) })
        case .selfAsked(let reply):
            reply.succeed(true)
        case .selfAnswered(let result, let reply):
            reply.complete { try result.get() }
        case .spawnAndAsk(let reply):
            let mine = currentThread()
            let child = context.spawn(Where())
            context.ask(child, { .thread($0) }, then: { .answered(mine, $0, reply) })
        }
    }
}

/// Direct hand-off (`Worker+HandOff.swift`): an ask of an idle actor made on a worker runs the
/// actor's turn on the asking thread; everything else is queued as before.
@Suite struct HandOffTests {
    @Test func anAskFromATaskOnTheExecutorRunsAnIdleActorsTurnOnTheAskingThread() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            _ = try await target.ask { .thread($0) }  // started: its first turn is behind it
            await waitUntilIdle(target)
            let before = system.scheduler.handOffTurns
            let samples = try await Task(executorPreference: system.taskExecutor) {
                var same = 0
                for _ in 0..<100 {
                    let asking = currentThread()
                    if try await target.ask({ .thread($0) }) == asking { same += 1 }
                }
                return same
            }.value
            #expect(samples == 100, "every handler ran on the asking task's thread")
            #expect(system.scheduler.handOffTurns - before == 100)
        }
    }

    /// An answered ask never reaches the timer: its heap keeps only the watchdog's entry.
    @Test func anAskAnsweredInPlaceArmsNoTimer() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            let (before, after) = try await Task(executorPreference: system.taskExecutor) {
                // The first ask may find the target's scheduling right still held by the worker
                // that ran its start, and then waits as before (arming its timer): count after
                // it, once no worker has the target scheduled (under ThreadSanitizer that worker
                // can still hold it after the answer: a CI rehearsal saw two asks arm timers).
                // Every later ask finds the target idle, since a turn run in place ends before
                // its ask returns.
                _ = try await target.ask { .thread($0) }
                await waitUntilIdle(target)
                let before = system.timer.count
                for _ in 0..<50 { _ = try await target.ask { .thread($0) } }
                return (before, system.timer.count)
            }.value
            #expect(after == before)
        }
    }

    @Test func anActorsAskRunsAnIdleTargetInItsOwnTurn() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            let asker = system.spawn(Asker())
            _ = try await target.ask { .thread($0) }
            await waitUntilIdle(target)
            let before = system.scheduler.handOffTurns
            let (askerThread, targetThread) = try await asker.ask { .ask(target, $0) }
            #expect(askerThread == targetThread)
            #expect(system.scheduler.handOffTurns - before == 1)
        }
    }

    /// A spawn on a worker puts the new actor's first turn into that worker's slot; an ask of
    /// it before that turn ran takes the turn out of the slot and runs it in place: `started`,
    /// then the ask. One worker, so no other worker can take the slot's entry first.
    @Test func aNewbornAskedByItsSpawningTaskRunsStartedAndTheAskInPlace() async throws {
        try await withTestSystem(workers: 1) { system in
            let log = Newborn.StartLog()
            let before = system.scheduler.handOffTurns
            let (same, refs) = try await Task(executorPreference: system.taskExecutor) {
                var same = 0
                var refs: [ActorRef<Newborn.Message>] = []
                for _ in 0..<100 {
                    let asking = currentThread()
                    let newborn = system.spawn(Newborn(log: log))
                    refs.append(newborn)
                    if try await newborn.ask({ .thread($0) }) == asking { same += 1 }
                }
                return (same, refs)
            }.value
            #expect(same == 100, "every first ask ran on the spawning task's thread")
            #expect(system.scheduler.handOffTurns - before == 100)
            // `started` ran once per actor, in the same turn as the ask, on the asking thread.
            let threads = log.threads.withLock { $0 }
            #expect(threads.count == 100)
            #expect(Set(threads).count == 1)
            for ref in refs { ref.stop() }
        }
    }

    /// The same from an actor's turn: a child spawned with `context.spawn` and asked at once.
    @Test func aChildAskedByItsParentInTheSpawningTurnIsHandedOff() async throws {
        try await withTestSystem(workers: 1) { system in
            let parent = system.spawn(Asker())
            _ = try await parent.ask { .askSelf($0) }
            let before = system.scheduler.handOffTurns
            let (parentThread, childThread) = try await parent.ask { .spawnAndAsk($0) }
            #expect(parentThread == childThread)
            #expect(system.scheduler.handOffTurns - before == 1)
        }
    }

    /// A newborn told something before its first ask: the turn in place runs `started` and the
    /// tell (the first message), and the ask is answered after it, in order.
    @Test func aNewbornToldBeforeItsFirstAskHandlesBothInOrder() async throws {
        try await withTestSystem(workers: 1) { system in
            let recorded = try await Task(executorPreference: system.taskExecutor) {
                let newborn = system.spawn(Where())
                newborn.tell(.record(1))
                newborn.tell(.record(2))
                return try await newborn.ask { .recorded($0) }
            }.value
            #expect(recorded == [1, 2])
        }
    }

    /// Two workers, the spawning task sometimes held in its job after the spawn long enough
    /// (over `Worker.strandedGraceNanoseconds`) for the other worker to take the newborn's first
    /// turn out of the slot: whichever of the two gets it, `started` runs once, before the ask,
    /// and every ask is answered.
    @Test func aNewbornTakenByAThiefOrByItsAskerStartsOnceBeforeItsAsk() async throws {
        try await withTestSystem(workers: 2) { system in
            let starts = StartCounter.Count()
            let before = system.scheduler.handOffTurns
            let answers = try await Task(executorPreference: system.taskExecutor) {
                var answers: [Bool] = []
                for round in 0..<StressScale.scaled(2_000, minimum: 300) {
                    let newborn = system.spawn(StartCounter(starts: starts))
                    if round % 3 == 0 {
                        // Long enough for a polling worker to see the slot stranded.
                        let until = ContinuousClock.now + .microseconds(20)
                        while ContinuousClock.now < until {}
                    }
                    answers.append(try await newborn.ask { .startedFirst($0) })
                    newborn.stop()
                }
                return answers
            }.value
            #expect(answers.allSatisfy { $0 }, "started ran before the first ask's handler")
            #expect(starts.value.load(ordering: .relaxed) == answers.count, "started ran once per actor")
            // For the log: how many first turns the asker ran (the rest, a thief or the worker).
            print("newborns run in place by their asker: \(system.scheduler.handOffTurns - before) of \(answers.count)")
        }
    }

    /// An ask of an actor that already ran finds its entry in the slot (a tell just put it
    /// there): the entry goes back, and the ask is queued behind the tell.
    @Test func aStartedActorInTheSlotIsLeftThereAndAskedInOrder() async throws {
        try await withTestSystem(workers: 1) { system in
            let target = system.spawn(Where())
            _ = try await target.ask { .thread($0) }
            await waitUntilIdle(target)
            let before = system.scheduler.handOffTurns
            let recorded = try await Task(executorPreference: system.taskExecutor) {
                target.tell(.record(7))
                return try await target.ask { .recorded($0) }
            }.value
            #expect(recorded == [7])
            #expect(system.scheduler.handOffTurns == before)
        }
    }

    /// An actor asking itself finds its own scheduling right held: the request is queued and
    /// answered in a later turn, never run inside the asking turn.
    @Test func anActorAskingItselfIsNeverRunInsideItsOwnTurn() async throws {
        try await withTestSystem { system in
            let asker = system.spawn(Asker())
            let before = system.scheduler.handOffTurns
            let answered = try await asker.ask { .askSelf($0) }
            #expect(answered)
            #expect(system.scheduler.handOffTurns == before)
        }
    }

    /// A target with messages queued is not handed off: the ask goes behind them, in order.
    @Test func aBusyTargetIsQueuedInSendOrder() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            _ = try await target.ask { .thread($0) }
            let recorded = try await Task(executorPreference: system.taskExecutor) {
                for round in 0..<200 {
                    target.tell(.record(2 * round))
                    target.tell(.record(2 * round + 1))
                    _ = try await target.ask { .thread($0) }
                }
                return try await target.ask { .recorded($0) }
            }.value
            #expect(recorded == Array(0..<400))
        }
    }

    /// Chains of asks from handlers nest turns in place at most `HandOff.maximumDepth` deep;
    /// deeper links are queued, and every answer arrives.
    @Test func turnsInPlaceNestAtMostTheMaximumDepth() async throws {
        try await withTestSystem { system in
            var next: ActorRef<Link.Message>? = nil
            for _ in 0..<12 { next = system.spawn(Link(next: next)) }
            let head = try #require(next)
            // Every link started before the chain is asked.
            for _ in 0..<3 { _ = try await head.ask { .go(depthSeen: 0, $0) } }
            let deepest = try await Task(executorPreference: system.taskExecutor) {
                try await head.ask { .go(depthSeen: 0, $0) }
            }.value
            #expect(deepest >= 2, "the chain ran in place")
            #expect(deepest <= HandOff.maximumDepth)
        }
    }

    @Test func anAnswerFromAnotherThreadResumesTheWaitingTask() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            let answers = try await Task(executorPreference: system.taskExecutor) {
                var sum: UInt = 0
                for _ in 0..<200 { sum += try await target.ask { .answerLater($0) } }
                return sum
            }.value
            #expect(answers == 200 * 7)
        }
    }

    /// The time limit of an ask still open after its turn in place holds.
    @Test func anAskLeftOpenByItsTurnInPlaceTimesOut() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            _ = try await target.ask { .thread($0) }
            let outcome = await Task(executorPreference: system.taskExecutor) {
                await askResult { try await target.ask(timeout: .milliseconds(50)) { .keep($0) } }
            }.value
            guard case .failure(.timedOut(let after)) = outcome else {
                Issue.record("expected .timedOut, got \(outcome)")
                return
            }
            #expect(after == .milliseconds(50))
        }
    }

    @Test func aTaskCancelledWhileWaitingAfterItsTurnInPlaceEndsCancelled() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            _ = try await target.ask { .thread($0) }
            let task = Task(executorPreference: system.taskExecutor) {
                await askResult { try await target.ask { .keep($0) } }
            }
            try await Task.sleep(for: .milliseconds(20))
            task.cancel()
            let outcome = await task.value
            #expect(outcome.askError?.kind == .cancelled)
        }
    }

    @Test func aReplyDroppedOrFailedInPlaceEndsTheAskAtOnce() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            _ = try await target.ask { .thread($0) }
            let (dropped, failed) = await Task(executorPreference: system.taskExecutor) {
                let dropped = await askResult { try await target.ask { .drop($0) } }
                let failed = await askResult { try await target.ask { .fail($0) } }
                return (dropped, failed)
            }.value
            #expect(dropped.askError?.kind == .noReply)
            guard case .failure(.failed(let inner)) = failed else {
                Issue.record("expected .failed, got \(failed)")
                return
            }
            #expect(inner is Where.Failure)
        }
    }

    /// Results that do not fit the deposit room, or need 16-byte alignment, take the queued path.
    @Test func resultsTooWideOrOverAlignedForTheDepositAreStillAnswered() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where())
            _ = try await target.ask { .thread($0) }
            await waitUntilIdle(target)
            let before = system.scheduler.handOffTurns
            let (wide, aligned) = try await Task(executorPreference: system.taskExecutor) {
                (try await target.ask { .wide($0) }, try await target.ask { .aligned($0) })
            }.value
            #expect(wide == Wide())
            #expect(aligned == Int128(1) << 100)
            #expect(system.scheduler.handOffTurns == before)
        }
    }

    @Test func aSystemWithoutDirectHandOffQueuesEveryAsk() async throws {
        let system = ActorSystem(
            configuration: .init(
                name: "no-hand-off", workerCount: 2, pinWorkers: false, logger: quietLogger,
                directHandOff: false))
        let target = system.spawn(Where())
        let asker = system.spawn(Asker())
        try await Task(executorPreference: system.taskExecutor) {
            for _ in 0..<50 { _ = try await target.ask { .thread($0) } }
        }.value
        _ = try await asker.ask { .ask(target, $0) }
        #expect(system.scheduler.handOffTurns == 0)
        await system.shutdown()
    }

    @Test func dedicatedThreadActorsAreNeverHandedOff() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Where(), options: SpawnOptions(executor: .dedicatedThread))
            let before = system.scheduler.handOffTurns
            let asking = try await Task(executorPreference: system.taskExecutor) {
                (currentThread(), try await target.ask { .thread($0) })
            }.value
            #expect(asking.0 != asking.1)
            #expect(system.scheduler.handOffTurns == before)
        }
    }

    /// While a handler runs in place, the worker shows its actor as the one it runs.
    @Test func theSnapshotShowsTheActorWhoseTurnRunsInPlace() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let blocker = system.spawn(Blocking(gate: gate))
            _ = try await blocker.ask { .ping($0) }
            let task = Task(executorPreference: system.taskExecutor) { try await blocker.ask { .block($0) } }
            await waitUntil("the handler blocks") { gate.entered == 1 }
            let running = system.snapshot().workers.compactMap { $0.running?.actor }
            gate.open()
            _ = try await task.value
            #expect(running.contains(blocker.address))
        }
    }
}

/// Counts its starts and answers whether `started` ran before the handler.
private struct StartCounter: ActorDefinition {
    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }
    enum Message: Sendable { case startedFirst(Reply<Bool>) }
    let starts: Count
    var didStart = false

    mutating func started(context: ActorContext<Message>) {
        didStart = true
        starts.value.add(1, ordering: .relaxed)
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .startedFirst(let reply): reply.succeed(didStart)
        }
    }
}

/// Records the thread `started` ran on, and answers with the thread its handler runs on.
private struct Newborn: ActorDefinition {
    final class StartLog: Sendable {
        let threads = Mutex<[UInt]>([])
    }
    enum Message: Sendable { case thread(Reply<UInt>) }
    let log: StartLog

    func started(context: ActorContext<Message>) { log.threads.withLock { $0.append(currentThread()) } }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .thread(let reply): reply.succeed(currentThread())
        }
    }
}

private struct Blocking: ActorDefinition {
    enum Message: Sendable { case ping(Reply<Bool>), block(Reply<Bool>) }
    let gate: Gate
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .ping(let reply): reply.succeed(true)
        case .block(let reply):
            _ = gate.enter()
            reply.succeed(gate.wait())
        }
    }
}

/// Waits until nobody holds `ref`'s scheduling right: the worker that answered the last ask
/// may still be ending that turn, and an ask made meanwhile is queued, not handed off.
func waitUntilIdle<Message: Sendable>(_ ref: ActorRef<Message>) async {
    await waitUntil("the target idle") { !CTroupe_mailbox_is_scheduled(ref.cell.mailbox) }
}
