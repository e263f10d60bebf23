import Testing
import TroupeTestSupport

@testable import Troupe

/// Blocking asks: `askBlocking` from plain threads, with a timeout, on refs and pools of both
/// actor kinds, and its refusal on worker threads (blocking one could hold up the answer).
@Suite struct BlockingAskTests {
    @Test func askBlockingFromAPlainThreadReturnsTheAnswer() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter(total: 40))
            counter.tell(.add(2))
            let result = await TestThreads.onNewThread {
                Result { () throws(AskError) -> Int in try counter.askBlocking(timeout: .seconds(10)) { .get($0) } }
            }
            #expect(result.value == 42)
        }
    }

    /// A thread's blocking asks share one parker (no waiter allocated per ask), answers never
    /// leak from one ask into the next, and a thread that exits lets go of its parker.
    @Test func aThreadsBlockingAsksShareOneParkerThatGoesWithTheThread() async throws {
        try await withTestSystem { system in
            let counter = system.spawn(Counter(total: 0))
            let (answers, sameParker, parker) = await TestThreads.onNewThread {
                () -> ([Int], Bool, WeakBox<ThreadParker>) in
                let first = ThreadParker.current
                var answers: [Int] = []
                for value in 1...200 {
                    counter.tell(.add(1))
                    answers.append((try? counter.askBlocking(timeout: .seconds(10)) { .get($0) }) ?? -value)
                }
                return (answers, ThreadParker.current === first, WeakBox(first))
            }
            #expect(answers == Array(1...200), "each ask got its own answer")
            #expect(sameParker)
            await waitUntil("the exited thread's parker is released") { parker.value == nil }
            #expect(parker.value == nil)
        }
    }

    @Test func askBlockingTimesOutWithTheGivenDuration() async throws {
        try await withTestSystem { system in
            let worker = system.spawn(PoolWorker(index: 0))
            let started = ContinuousClock.now
            let result = await TestThreads.onNewThread {
                Result { () throws(AskError) -> Int in try worker.askBlocking(timeout: .milliseconds(50)) { .keep($0) }
                }
            }
            guard case .failure(.timedOut(let after)) = result else {
                Issue.record("expected .timedOut, got \(result)")
                return
            }
            #expect(after == .milliseconds(50))
            #expect(ContinuousClock.now - started >= .milliseconds(50))
        }
    }

    @Test func askBlockingOnAWorkerThreadIsRefused() async throws {
        try await withTestSystem { system in
            let target = system.spawn(Counter())
            let caller = system.spawn(BlockingRefAndPoolCaller(target: target))
            let outcome = try await caller.ask { .callTarget($0) }
            #expect(outcome == "blockingOnWorkerThread")
            let poolOutcome = try await caller.ask { .callPool($0) }
            #expect(poolOutcome == "blockingOnWorkerThread")
        }
    }

    @Test func poolAndHandlerActorsAnswerBlockingAsks() async throws {
        try await withTestSystem { system in
            let pool = try system.spawnPool(size: 3) { PoolWorker(index: $0) }
            let api = system.spawn(APIActor(member: 9))
            let apiPool = try system.spawnPool(size: 2) { APIActor(member: $0) }
            let answers = await TestThreads.onNewThread { () -> [String] in
                var answers: [String] = []
                for _ in 0..<3 {
                    answers.append(
                        (try? pool.askBlocking(timeout: .seconds(10)) { .whoAmI($0) }).map(String.init) ?? "error")
                }
                answers.append(
                    (try? api.askBlocking("/sync", returning: String.self, timeout: .seconds(10))) ?? "error")
                answers.append(
                    (try? apiPool.askBlocking("/sync", returning: String.self, timeout: .seconds(10))) ?? "error")
                return answers
            }
            #expect(Set(answers.prefix(3)) == ["0", "1", "2"])
            #expect(answers[3] == "GET /sync via api-9")
            #expect(answers[4].hasPrefix("GET /sync via api-"))
        }
    }
}

/// Calls `askBlocking` on a ref or on a pool from inside a handler, that is on a worker thread.
private struct BlockingRefAndPoolCaller: ActorDefinition {
    enum Message: Sendable {
        case callTarget(Reply<String>)
        case callPool(Reply<String>)
    }

    let target: ActorRef<Counter.Message>
    var pool: ActorPool<Counter.Message>?

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .callTarget(let reply):
            reply.succeed(
                Self.outcome { () throws(AskError) in try target.askBlocking(timeout: .seconds(1)) { .get($0) } })
        case .callPool(let reply):
            let pool = try self.pool ?? context.system.spawnPool(size: 2) { _ in Counter() }
            self.pool = pool
            reply.succeed(
                Self.outcome { () throws(AskError) in try pool.askBlocking(timeout: .seconds(1)) { .get($0) } })
        }
    }

    private static func outcome(_ body: () throws(AskError) -> Int) -> String {
        do {
            return "answered \(try body())"
        } catch {
            return "\(error.kind)"
        }
    }
}
