import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Worker threads and scheduling: an actor never runs on two threads at once, every actor
/// makes progress (stealing, fairness), idle workers wake up, configuration is honoured.
@Suite struct SchedulerTests {
    @Test func anActorNeverRunsOnTwoThreadsAtOnce() async throws {
        try await withTestSystem(workers: 2, batchSize: 8) { system in
            let overlaps = AtomicCounter()
            let handled = AtomicCounter()
            let probe = system.spawn(ExclusivityProbe(overlaps: overlaps, handled: handled))
            let producers = 6, perProducer = 20_000
            await TestThreads.run(count: producers) { _ in
                for _ in 0..<perProducer { probe.tell(.work) }
            }
            await waitUntil("all handled") { handled.value == producers * perProducer }
            #expect(overlaps.value == 0)
            // The instance's plain (non-atomic) counter saw every message: no lost update.
            let answer1 = try await probe.ask { ExclusivityProbe.Message.count($0) }
            #expect(answer1 == producers * perProducer)
        }
    }

    @Test func workerCountIsHonoured() async throws {
        for workers in [1, 2, 3] {
            let system = makeTestSystem(workers: workers)
            #expect(system.workerCount == workers)
            await system.shutdown()
        }
        let defaulted = ActorSystem(configuration: .init(logger: quietLogger))
        #expect(defaulted.workerCount >= 1, "one per CPU of the affinity mask")
        await defaulted.shutdown()
    }

    @Test func aSelfMessagingActorDoesNotStarveOthersOnOneWorker() async throws {
        try await withTestSystem(workers: 1, batchSize: 16) { system in
            let stop = Flag()
            let loops = AtomicCounter()
            let spinner = system.spawn(SelfLooper(stop: stop, loops: loops))
            spinner.tell(.loop)
            await waitUntil("spinner running") { loops.value > 100 }
            let received = Recorder<Int>()
            let other = system.spawn(Probe<Int>(received: received))
            other.tell(1)
            await waitUntil("the other actor got a turn on the only worker") { received.count == 1 }
            #expect(!stop.isSet && loops.value > 100, "the spinner was still looping meanwhile")
            #expect(received.values == [1])
            stop.set()
        }
    }

    @Test func batchSizeOfOneDeliversEverythingInOrder() async throws {
        try await withTestSystem(workers: 2, batchSize: 1) { system in
            let received = Recorder<Int>()
            let probe = system.spawn(Probe<Int>(received: received))
            for value in 0..<5000 { probe.tell(value) }
            await waitUntil("all handled") { received.count == 5000 }
            #expect(received.values == Array(0..<5000))
        }
    }

    @Test func thousandsOfActorsAllMakeProgress() async throws {
        try await withTestSystem { system in
            let handled = AtomicCounter()
            let actors = (0..<3000).map { _ in system.spawn(CountingSink(handled: handled)) }
            for round in 0..<10 { for actor in actors { actor.tell(round) } }
            await waitUntil("30 000 messages handled") { handled.value == 30_000 }
            #expect(system.liveActorCount == 3000)
        }
    }

    @Test func actorsQueuedBehindABlockedWorkerAreRunByTheOtherWorker() async throws {
        // One worker is held by a blocked handler; actors scheduled round-robin onto its queue
        // must be picked up (stolen) by the other worker.
        try await withTestSystem(workers: 2) { system in
            let gate = Gate()
            let blocker = system.spawn(ThreadReporter(gate: gate))
            blocker.tell(.hold)
            await waitUntil("one worker held") { gate.entered == 1 }
            let handled = AtomicCounter()
            let actors = (0..<100).map { _ in system.spawn(CountingSink(handled: handled)) }
            for actor in actors { actor.tell(0) }
            await waitUntil("every actor handled its message with one worker blocked") { handled.value == 100 }
            #expect(!gate.isOpen && gate.entered == 1, "the blocker still holds its worker")
            #expect(handled.value == 100)
            gate.open()
        }
    }

    @Test func pingPongBetweenTwoActorsCompletes() async throws {
        try await withTestSystem { system in
            let done = Recorder<Int>()
            let ponger = system.spawn(PingPong(done: done))
            let pinger = system.spawn(PingPong(done: done))
            pinger.tell(.ball(remaining: 20_000, partner: ponger))
            await waitUntil("rally finished") { done.count == 1 }
            #expect(done.values == [0])
        }
    }

    @Test func idleWorkersWakeUpForEachNewMessage() async throws {
        try await withTestSystem { system in
            let received = Recorder<Int>()
            let probe = system.spawn(Probe<Int>(received: received))
            // Each message is sent only after the previous one was handled, with the workers
            // idle (and, after their brief spin, parked) in between.
            for value in 0..<50 {
                probe.tell(value)
                await waitUntil("message \(value) handled") { received.count == value + 1 }
            }
            #expect(received.values == Array(0..<50))
        }
    }

    @Test func invalidWorkerCountIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            _ = ActorSystem(configuration: .init(workerCount: 0, pinWorkers: false))
        }
    }

    @Test func invalidBatchSizeIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            _ = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false, batchSize: 0))
        }
    }

    @Test func pinnedWorkersRunActors() async throws {
        let system = ActorSystem(
            configuration: .init(name: "pinned", workerCount: 2, pinWorkers: true, logger: quietLogger))
        let received = Recorder<Int>()
        let probe = system.spawn(Probe<Int>(received: received))
        for value in 0..<100 { probe.tell(value) }
        await waitUntil("handled on pinned workers") { received.count == 100 }
        await system.shutdown()
        #expect(received.values == Array(0..<100))
    }
}

// MARK: - Test actors

/// Detects overlapping handler executions (which the mailbox protocol must rule out).
struct ExclusivityProbe: ActorDefinition {
    enum Message: Sendable {
        case work
        case count(Reply<Int>)
    }

    let overlaps: AtomicCounter
    let handled: AtomicCounter
    let busy = AtomicCounter()
    var plainCount = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .work:
            if busy.increment() != 1 { overlaps.increment() }
            plainCount += 1
            handled.increment()
            busy.increment(by: -1)
        case .count(let reply): reply.succeed(plainCount)
        }
    }
}

struct SelfLooper: ActorDefinition {
    enum Message: Sendable { case loop }
    let stop: Flag
    let loops: AtomicCounter
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        loops.increment()
        if !stop.isSet { context.ref.tell(.loop) }
    }
}

struct PingPong: ActorDefinition {
    enum Message: Sendable { case ball(remaining: Int, partner: ActorRef<Message>) }
    let done: Recorder<Int>
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .ball(let remaining, let partner):
            if remaining == 0 {
                done.append(remaining)
            } else {
                partner.tell(.ball(remaining: remaining - 1, partner: context.ref))
            }
        }
    }
}
