#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// (4) Many concurrent asks of every kind (async, callback, blocking, actor-to-actor): all
/// answered, with the right values.
extension StressTests {
    struct Doubler: ActorDefinition {
        enum Message: Sendable { case double(Int, Reply<Int>) }
        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .double(let value, let reply): reply.succeed(value * 2)
            }
        }
    }

    /// Asks a `Doubler` for every request and answers its own asker when the answer arrives.
    struct Relay: ActorDefinition {
        enum Message: Sendable {
            case relay(Int, Reply<Int>)
            case answered(Result<Int, AskError>, Reply<Int>)
        }

        let target: ActorRef<Doubler.Message>

        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .relay(let value, let reply):
                context.ask(
                    target, timeout: .seconds(120), { Doubler.Message.double(value, $0) },
                    then: { .answered($0, reply) })
            case .answered(let result, let reply):
                switch result {
                case .success(let value): reply.succeed(value + 1)
                case .failure(let error): reply.fail(error)
                }
            }
        }
    }

    @Test(.timeLimit(.minutes(20)))
    func askStormIsFullyAnswered() async throws {
        let system = makeTestSystem(name: "asks")
        let doublers = (0..<16).map { _ in system.spawn(Doubler()) }
        let relays = doublers.map { system.spawn(Relay(target: $0)) }
        let tasks = 64
        let asksPerTask = StressScale.scaled(1500, minimum: 20)
        let callbackThreads = 4
        let callbacksPerThread = StressScale.scaled(25_000, minimum: 100)
        let blockingThreads = 4
        let blockingPerThread = StressScale.scaled(3000, minimum: 20)
        let wrong = AtomicCounter()
        let failures = Recorder<String>()
        let clock = ContinuousClock()
        let start = clock.now

        // Callback asks and blocking asks from plain threads, concurrently with the tasks.
        let callbacksDone = AtomicCounter()
        async let threads: Void = TestThreads.run(count: callbackThreads + blockingThreads) { thread in
            if thread < callbackThreads {
                for index in 0..<callbacksPerThread {
                    let value = thread * 1_000_000 + index
                    doublers[index % doublers.count].ask(
                        timeout: .seconds(120), { Doubler.Message.double(value, $0) },
                        onReply: { result in
                            switch result {
                            case .success(let doubled): if doubled != value * 2 { wrong.increment() }
                            case .failure(let error): failures.append("callback: \(error)")
                            }
                            callbacksDone.increment()
                        })
                    // Bound the asks in flight so the storm measures the runtime, not memory.
                    if index % 1024 == 0 {
                        while (thread * callbacksPerThread + index) - callbacksDone.value > 50_000 { sched_yield() }
                    }
                }
            } else {
                for index in 0..<blockingPerThread {
                    let value = thread * 1_000_000 + index
                    do throws(AskError) {
                        let doubled = try relays[index % relays.count].askBlocking(timeout: .seconds(120)) {
                            Relay.Message.relay(value, $0)
                        }
                        if doubled != value * 2 + 1 { wrong.increment() }
                    } catch {
                        failures.append("blocking: \(error)")
                    }
                }
            }
        }

        // Async asks from many tasks, half of them through the relays (actor-to-actor asks).
        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var count = 0
                    for index in 0..<asksPerTask {
                        let value = task * 10_000 + index
                        if index % 2 == 0 {
                            let doubled = try await doublers[(task + index) % doublers.count].ask(
                                timeout: .seconds(120)
                            ) { Doubler.Message.double(value, $0) }
                            if doubled != value * 2 { wrong.increment() }
                        } else {
                            let relayed = try await relays[(task + index) % relays.count].ask(timeout: .seconds(120)) {
                                Relay.Message.relay(value, $0)
                            }
                            if relayed != value * 2 + 1 { wrong.increment() }
                        }
                        count += 1
                    }
                    return count
                }
            }
            var total = 0
            for try await count in group { total += count }
            return total
        }
        await threads
        await waitUntil(timeout: StressScale.drainTimeout, "every callback ask completed") {
            callbacksDone.value == callbackThreads * callbacksPerThread
        }
        let elapsed = clock.now - start
        await system.shutdown()

        let total = answered + callbackThreads * callbacksPerThread + blockingThreads * blockingPerThread
        print(
            "ask storm: \(total) asks (\(answered) async, \(callbackThreads * callbacksPerThread) callback, \(blockingThreads * blockingPerThread) blocking) in \(elapsed)"
        )
        #expect(answered == tasks * asksPerTask)
        #expect(wrong.value == 0, "wrong answers")
        #expect(failures.values.isEmpty, "failed asks: \(failures.values.prefix(5))")
        #expect(system.deadLetters.total == 0)
    }
}
