import CTroupe
import Testing
import TroupeTestSupport

@testable import Troupe

/// The index of the calling thread's worker in `system`, if it is one of its shared workers.
private func workerIndex(in system: ActorSystem) -> Int? {
    system.scheduler.currentSharedWorkerIndex()
}

private struct ExecutorEcho: ActorDefinition {
    enum Message: Sendable { case echo(Int, Reply<Int>) }
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .echo(let value, let reply): reply.succeed(value)
        }
    }
}

/// Hands its work to `context.run` and reports on which thread the work ran.
private struct Runner: ActorDefinition {
    enum Message: Sendable { case go(Reply<Bool>), ran(Bool, Reply<Bool>) }
    let system: ActorSystem
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .go(let reply):
            let system = system
            context.run({ workerIndex(in: system) != nil }, then: { .ran((try? $0.get()) ?? false, reply) })
        case .ran(let onWorker, let reply):
            reply.succeed(onWorker)
        }
    }
}

@Suite struct TaskExecutorTests {
    @Test func aTaskPreferringTheExecutorRunsOnTheWorkers() async throws {
        try await withTestSystem { system in
            let ranOnWorker = await Task(executorPreference: system.taskExecutor) {
                workerIndex(in: system) != nil
            }.value
            #expect(ranOnWorker)
            let insideScope = await withTaskExecutorPreference(system.taskExecutor) {
                workerIndex(in: system) != nil
            }
            #expect(insideScope)
            #expect(system.taskExecutor.jobsRun >= 2)
        }
    }

    /// The reply resumes the task on the replying worker's lane: the code after the `await`
    /// runs on a worker, not on Swift's global pool.
    @Test func anAskFromATaskOnTheExecutorResumesOnAWorker() async throws {
        try await withTestSystem { system in
            let echo = system.spawn(ExecutorEcho())
            let results = await Task(executorPreference: system.taskExecutor) {
                var onWorker = 0
                var sum = 0
                for value in 0..<1_000 {
                    sum += (try? await echo.ask { .echo(value, $0) }) ?? -1_000_000
                    if workerIndex(in: system) != nil { onWorker += 1 }
                }
                return (onWorker, sum)
            }.value
            #expect(results.1 == (0..<1_000).reduce(0, +), "every ask answered")
            #expect(results.0 == 1_000, "every continuation resumed on a worker")
        }
    }

    @Test func contextRunRunsItsWorkOnTheWorkers() async throws {
        try await withTestSystem { system in
            let runner = system.spawn(Runner(system: system))
            let ranOnWorker = try await runner.ask { .go($0) }
            #expect(ranOnWorker)
        }
    }

    @Test func manyTasksAllComplete() async throws {
        try await withTestSystem { system in
            let count = StressScale.scaled(20_000, minimum: 2_000)
            let done = AtomicCounter()
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<count {
                    group.addTask(executorPreference: system.taskExecutor) {
                        await Task.yield()
                        done.increment()
                    }
                }
            }
            #expect(done.value == count)
        }
    }

    /// A task suspended across shutdown resumes afterwards (on the thread that resumes it):
    /// no continuation is stranded.
    @Test func aTaskSuspendedAcrossShutdownStillFinishes() async throws {
        let system = makeTestSystem()
        let gate = Box<CheckedContinuation<Void, Never>>()
        let finished = Flag()
        let task = Task(executorPreference: system.taskExecutor) {
            await withCheckedContinuation { gate.set($0) }
            finished.set()
        }
        waitUntilBlocking("the task suspended") { gate.value != nil }
        await system.shutdown()
        gate.value?.resume()
        await task.value
        #expect(finished.isSet)
    }

    /// The system drops its task executor when shutdown finishes (the executor's lanes hold the
    /// system): no reference cycle is left behind.
    @Test func shutdownReleasesTheSystemsHoldOnItsTaskExecutor() async throws {
        weak var released: TroupeTaskExecutor?
        do {
            let system = makeTestSystem()
            let executor = system.taskExecutor
            released = executor
            #expect(system.taskExecutor === executor, "one executor per system")
            await system.shutdown()
        }
        #expect(released == nil)
    }
}
