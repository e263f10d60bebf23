import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Direct hand-off under load: tasks on the task executor and actors ask idle and busy actors
/// whose answers come in the turn run in place, from a second actor a moment later, or from
/// a plain thread, so that the completer's deposit and the asking task's wait race in every
/// order. Every ask must be answered with the right value, none twice.
extension StressTests {
    struct Answerer: ActorDefinition {
        enum Message: Sendable {
            case now(Int, Reply<Int>)
            case viaActor(Int, Reply<Int>)
            case viaThread(Int, Reply<Int>)
            /// Keeps the answerer busy, so that the next ask is queued.
            case busy
        }
        let second: ActorRef<Second.Message>

        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .now(let value, let reply): reply.succeed(value &* 3)
            case .viaActor(let value, let reply): second.tell(.answer(value, reply))
            case .viaThread(let value, let reply): TestThreads.detach { reply.succeed(value &* 3) }
            case .busy: break
            }
        }
    }

    struct Second: ActorDefinition {
        enum Message: Sendable { case answer(Int, Reply<Int>) }
        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .answer(let value, let reply): reply.succeed(value &* 3)
            }
        }
    }

    /// Asks an `Answerer` from its turns (`context.ask`), one at a time, `remaining` times.
    struct ChainAsker: ActorDefinition {
        enum Message: Sendable {
            case start(Reply<Int>)
            case answered(Result<Int, AskError>)
        }
        let target: ActorRef<Answerer.Message>
        var remaining: Int
        var sum = 0
        var reply: Reply<Int>?

        mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .start(let reply):
                self.reply = reply
                ask(context)
            case .answered(let result):
                sum &+= (try? result.get()) ?? -1_000_000
                remaining -= 1
                if remaining == 0 {
                    reply?.succeed(sum)
                } else {
                    ask(context)
                }
            }
        }

        private func ask(_ context: ActorContext<Message>) {
            let value = remaining
            context.ask(
                target, timeout: .seconds(300),
                { remaining % 5 == 0 ? .viaActor(value, $0) : .now(value, $0) },
                then: { .answered($0) })
        }
    }

    @Test(.timeLimit(.minutes(20)))
    func handOffAsksAreAllAnsweredOnce() async throws {
        let system = makeTestSystem(name: "hand-off")
        let seconds = (0..<4).map { _ in system.spawn(Second()) }
        let targets = (0..<8).map { system.spawn(Answerer(second: seconds[$0 % seconds.count])) }
        let tasks = 16
        let asksPerTask = StressScale.scaled(20_000, minimum: 200)
        let chains = 8
        let asksPerChain = StressScale.scaled(20_000, minimum: 200)
        let wrong = AtomicCounter()

        let chainAnswers = (0..<chains).map { index in
            system.spawn(ChainAsker(target: targets[index % targets.count], remaining: asksPerChain))
        }
        async let chainSums = withThrowingTaskGroup(of: Int.self) { group in
            for chain in chainAnswers {
                group.addTask { try await chain.ask(timeout: .seconds(600)) { .start($0) } }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask(executorPreference: system.taskExecutor) {
                    for index in 0..<asksPerTask {
                        let target = targets[(task + index) % targets.count]
                        let value = task * 1_000_000 + index
                        if index % 7 == 0 { target.tell(.busy) }
                        let request: (Reply<Int>) -> Answerer.Message =
                            switch index % 10 {
                            case 0: { .viaThread(value, $0) }
                            case 1, 2: { .viaActor(value, $0) }
                            default: { .now(value, $0) }
                            }
                        let answer = try? await target.ask(timeout: .seconds(300), request)
                        if answer != value &* 3 { wrong.increment() }
                    }
                }
            }
        }
        let sums = try await chainSums
        let expectedChainSum = (1...asksPerChain).reduce(0) { $0 &+ $1 &* 3 }
        #expect(wrong.value == 0, "asks from tasks answered wrongly or not at all")
        #expect(sums.count == chains && sums.allSatisfy { $0 == expectedChainSum }, "actor asks: \(sums)")
        await system.shutdown()
    }
}
