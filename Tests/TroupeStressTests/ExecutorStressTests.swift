import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Troupe's workers as Swift executors under load: a native actor's jobs never overlap, and a
/// shutdown with jobs and continuations in flight neither hangs nor loses one.
@Suite struct ExecutorStressTests {
    /// A native actor on a Troupe serial executor that notices overlapping jobs.
    actor Tally {
        private let executor: TroupeSerialExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
        private let inside = Atomic<Bool>(false)
        private(set) var count = 0
        private(set) var overlaps = 0

        init(executor: TroupeSerialExecutor) { self.executor = executor }

        func add() {
            if inside.exchange(true, ordering: .acquiringAndReleasing) { overlaps += 1 }
            count += 1
            inside.store(false, ordering: .releasing)
        }
    }

    struct Doubler: ActorDefinition {
        enum Message: Sendable { case double(Int, Reply<Int>) }
        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .double(let value, let reply): reply.succeed(value * 2)
            }
        }
    }

    /// 10^6 jobs (scaled) on one serial executor, from tasks on Swift's global executor and on
    /// the system's task executor at once.
    @Test func aSerialExecutorRunsOneJobAtATimeUnderAMillionJobs() async throws {
        try await withTestSystem(workers: 2) { system in
            let executor = system.makeSerialExecutor()
            let tally = Tally(executor: executor)
            let senders = 16
            let perSender = StressScale.scaled(1_000_000) / senders
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<senders {
                    let preference: (any TaskExecutor)? = index.isMultiple(of: 2) ? system.taskExecutor : nil
                    group.addTask(executorPreference: preference) {
                        for _ in 0..<perSender { await tally.add() }
                    }
                }
            }
            #expect(await tally.count == senders * perSender)
            #expect(await tally.overlaps == 0, "two jobs of one serial executor ran at once")
        }
    }

    /// Tasks on the task executor ask actors and call a native actor on a serial executor in a
    /// loop while the system shuts down: every task finishes, and every ask is either answered
    /// or fails with a typed error.
    ///
    /// The shutdown comes once asks are being answered, and each task asks on until a few of its
    /// asks have failed (up to a cap), so asks are surely in flight when it comes, however fast or
    /// slow the machine (a fixed 20 ms wait was once too long under TSan: every ask had finished).
    @Test func shutdownWithJobsAndContinuationsInFlightLosesNothing() async throws {
        let system = makeTestSystem(workers: 2)
        let doubler = system.spawn(Doubler())
        let tally = Tally(executor: system.makeSerialExecutor())
        let tasks = 32
        let cap = StressScale.scaled(200_000, minimum: 20_000)
        let failuresToSee = 8
        let answeredSoFar = AtomicCounter()
        var handles: [Task<(answered: Int, failed: Int, attempted: Int), Never>] = []
        for _ in 0..<tasks {
            handles.append(
                Task(executorPreference: system.taskExecutor) {
                    var answered = 0
                    var failed = 0
                    var attempted = 0
                    while attempted < cap && failed < failuresToSee {
                        let round = attempted
                        attempted += 1
                        do {
                            let doubled = try await doubler.ask { .double(round, $0) }
                            if doubled == round * 2 { answered += 1 }
                            answeredSoFar.increment()
                        } catch {
                            failed += 1
                        }
                        await tally.add()
                    }
                    return (answered, failed, attempted)
                })
        }
        await waitUntil("asks are being answered") { answeredSoFar.value >= tasks * 10 }
        await system.shutdown()
        var answered = 0
        var failed = 0
        var attempted = 0
        for handle in handles {
            let outcome = await handle.value
            #expect(
                outcome.answered + outcome.failed == outcome.attempted, "an ask ended without an answer or an error")
            answered += outcome.answered
            failed += outcome.failed
            attempted += outcome.attempted
        }
        #expect(answered + failed == attempted)
        #expect(failed > 0, "the shutdown came while asks were in flight (else this test proves little)")
        #expect(await tally.count == attempted, "every job of the serial executor ran, before or after shutdown")
        #expect(await tally.overlaps == 0)
    }
}
