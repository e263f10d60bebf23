import CTroupe
import Distributed
import Synchronization
import Testing
import TroupeTestSupport

@testable import Troupe

/// A native actor whose jobs run on a Troupe serial executor.
actor OnTroupe {
    private let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private var count = 0
    private var order: [Int] = []
    /// Set while a method runs: a second job entering at the same time finds it set.
    private let inside = Atomic<Bool>(false)
    private(set) var overlaps = 0
    private(set) var offWorker = 0

    init(executor: TroupeSerialExecutor) { self.executor = executor }

    func increment() {
        if inside.exchange(true, ordering: .acquiringAndReleasing) { overlaps += 1 }
        if CTroupe_current_worker() == nil { offWorker += 1 }
        count += 1
        inside.store(false, ordering: .releasing)
    }

    var total: Int { count }
    var recorded: [Int] { order }

    func record(_ value: Int) { order.append(value) }

    /// Starts `count` tasks from inside this actor, each recording its index: every task's first
    /// job is enqueued on this actor's executor, in creation order, from this one thread. Half
    /// the tasks are created with a high priority and half with a low one. Returns the last.
    func startOrderedTasks(_ count: Int) -> Task<Void, Never> {
        var last: Task<Void, Never>?
        for index in 0..<count {
            last = Task(priority: index.isMultiple(of: 2) ? .high : .low) { self.record(index) }
        }
        return last!
    }

    /// Whether the executor sees the calling code as isolated to it.
    func isolationSeenInside() -> Bool? { executor.isIsolatingCurrentContext() }

    func checkIsolatedInside() -> Bool {
        executor.checkIsolated()
        return true
    }

    func assumeIsolatedFromASynchronousFunction() -> Int {
        Self.readCount(self)
    }

    private nonisolated static func readCount(_ actor: OnTroupe) -> Int {
        actor.assumeIsolated { $0.count }
    }
}

/// Pairs callers: the first waits (a continuation stored in the actor), the second resumes it.
/// Correct only if nothing else runs on the actor between the check of `waiting` and the store
/// in the continuation's closure, which holds when an `await` that stays on the actor does not
/// re-enqueue the task (it did, for tasks preferring the task executor, before jobs ran with the
/// task executor their enqueuer ran with).
actor Matchmaker {
    private let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var left: Int
    private var waiting: (id: Int, continuation: UnsafeContinuation<Int?, Never>)?

    init(pairs: Int, executor: TroupeSerialExecutor) {
        left = pairs
        self.executor = executor
    }

    func meet(_ id: Int) async -> Int? {
        if left == 0 { return nil }
        if let first = waiting {
            waiting = nil
            left -= 1
            first.continuation.resume(returning: id)
            return first.id
        }
        return await withUnsafeContinuation { waiting = (id, $0) }
    }
}

@Suite struct SerialExecutorTests {
    @Test(arguments: [false, true])
    func anAwaitThatStaysOnTheActorDoesNotLetOthersIn(tasksPreferTheWorkers: Bool) async throws {
        try await withTestSystem { system in
            let matchmaker = Matchmaker(pairs: 500, executor: system.makeSerialExecutor())
            let done = AtomicCounter()
            let callers = 8
            for id in 0..<callers {
                Task(executorPreference: tasksPreferTheWorkers ? system.taskExecutor : nil) {
                    while await matchmaker.meet(id) != nil {}
                    done.increment()
                }
            }
            // Generous: the global-executor case needs Swift's 2-thread cooperative pool, which
            // the other suites running in parallel can keep busy for seconds (seen in CI).
            let finished = await waitUntil(timeout: .seconds(90), "every caller finished") { done.value == callers }
            #expect(finished, "\(done.value) of \(callers) callers finished")
        }
    }

    /// The system lists a serial executor's lane (snapshots read it) from the executor's
    /// creation to its release, holding it strongly (a weak reference would give every lane a
    /// side table): once the executor and its actors are gone, the lane goes too, the snapshot
    /// no longer counts it, and the system is still freed after shutdown.
    @Test func aReleasedExecutorTakesItsLaneWithIt() async throws {
        var system: ActorSystem? = makeTestSystem()
        let weakSystem = WeakBox(system!)
        var executor: TroupeSerialExecutor? = system!.makeSerialExecutor()
        let weakExecutor = WeakBox(executor!)
        let weakLane = WeakBox(executor!.lane)
        do {
            let actor = OnTroupe(executor: executor!)
            for _ in 0..<100 { await actor.increment() }
            #expect(await actor.total == 100)
        }
        #expect(system!.introspector.liveSerialLanes.contains { $0 === weakLane.value })
        executor = nil
        await waitUntil("the executor and its lane are freed") { weakExecutor.value == nil && weakLane.value == nil }
        #expect(weakLane.value == nil, "the system's list kept the lane alive")
        #expect(system!.introspector.liveSerialLanes.isEmpty)
        await system!.shutdown()
        system = nil
        await waitUntil("the system is freed") { weakSystem.value == nil }
        #expect(weakSystem.value == nil)
    }

    @Test func aNativeActorsMethodsRunOnTheWorkersOneAtATime() async throws {
        try await withTestSystem { system in
            let executor = system.makeSerialExecutor()
            let actor = OnTroupe(executor: executor)
            let tasks = 8
            let perTask = StressScale.scaled(5_000, minimum: 500)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<tasks {
                    group.addTask { for _ in 0..<perTask { await actor.increment() } }
                }
            }
            #expect(await actor.total == tasks * perTask)
            #expect(await actor.overlaps == 0, "two jobs of one serial executor ran at once")
            #expect(await actor.offWorker == 0, "every job ran on a Troupe worker")
            #expect(executor.jobsRun >= tasks * perTask, "every call was a job of the executor")
        }
    }

    /// FIFO per enqueuing thread, whatever the tasks' priorities; escalating the last task's
    /// priority (a high-priority task awaits it) does not move it ahead of the others.
    @Test func jobsEnqueuedFromOneThreadRunInOrderWhateverTheirPriority() async throws {
        try await withTestSystem { system in
            let actor = OnTroupe(executor: system.makeSerialExecutor())
            let count = 1_000
            let last = await actor.startOrderedTasks(count)
            await Task(priority: .high) { await last.value }.value
            let deadline = ContinuousClock.now + .seconds(20)
            while await actor.recorded.count < count && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(await actor.recorded == Array(0..<count))
        }
    }

    @Test func isolationHoldsInsideTheExecutorsJobsOnly() async throws {
        try await withTestSystem { system in
            let executor = system.makeSerialExecutor()
            let actor = OnTroupe(executor: executor)
            #expect(await actor.isolationSeenInside() == true)
            #expect(await actor.checkIsolatedInside())
            await actor.increment()
            #expect(await actor.assumeIsolatedFromASynchronousFunction() == 1)
            #expect(executor.isIsolatingCurrentContext() == false, "a test task is not one of its jobs")
        }
    }

    @Test func checkIsolatedOffTheExecutorTraps() async throws {
        let result = try await #require(
            processExitsWith: .failure, observing: [\.standardErrorContent]
        ) {
            let system = ActorSystem(configuration: .init(name: "exit", workerCount: 1, logger: quietLogger))
            system.makeSerialExecutor().checkIsolated()
        }
        let output = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(output.contains("not isolated to TroupeSerialExecutor"), "\(output)")
    }

    @Test func twoExecutorsAreIndependentActors() async throws {
        try await withTestSystem { system in
            let first = OnTroupe(executor: system.makeSerialExecutor())
            let second = OnTroupe(executor: system.makeSerialExecutor())
            async let a: Void = { for _ in 0..<1_000 { await first.increment() } }()
            async let b: Void = { for _ in 0..<1_000 { await second.increment() } }()
            _ = await (a, b)
            #expect(await first.total == 1_000)
            #expect(await second.total == 1_000)
        }
    }

    /// After shutdown a job is never dropped: it runs on the thread that enqueues it.
    @Test func aJobEnqueuedAfterShutdownStillRuns() async throws {
        let system = makeTestSystem()
        let actor = OnTroupe(executor: system.makeSerialExecutor())
        await actor.increment()
        await system.shutdown()
        await actor.increment()
        #expect(await actor.total == 2)
    }
}

/// A distributed actor's executor must be reachable without its state (stored properties of a
/// distributed actor are isolated): here one Troupe executor shared by every `Greeter`, on a
/// system that lives as long as the test process.
enum DistributedExecutors {
    static let system = ActorSystem(configuration: .init(name: "distributed", workerCount: 1, logger: quietLogger))
    static let shared = system.makeSerialExecutor()
}

distributed actor Greeter {
    typealias ActorSystem = LocalTestingDistributedActorSystem
    nonisolated var unownedExecutor: UnownedSerialExecutor { DistributedExecutors.shared.asUnownedSerialExecutor() }

    distributed func greet(_ name: String) -> String {
        DistributedExecutors.shared.checkIsolated()
        return CTroupe_current_worker() != nil ? "hello \(name), from a worker" : "off the workers"
    }
}

@Suite struct DistributedActorOnTroupeTests {
    @Test func aDistributedActorsCallsRunOnTheWorkers() async throws {
        let actorSystem = LocalTestingDistributedActorSystem()
        let greeter = Greeter(actorSystem: actorSystem)
        let before = DistributedExecutors.shared.jobsRun
        #expect(try await greeter.greet("you") == "hello you, from a worker")
        #expect(DistributedExecutors.shared.jobsRun > before)
        // The testing actor system keeps its actors until their IDs are resigned (a cycle
        // LeakSanitizer would report otherwise).
        actorSystem.resignID(greeter.id)
    }
}
