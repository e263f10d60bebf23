// TroupePromises workloads for troupe-bench (issue 5). Self-contained: depends only on Troupe and
// TroupePromises. To wire in: add "TroupePromises" to troupe-bench's dependencies and call
// `PromisesBench.run(iterations:)` (or map each function onto the harness's workload type).
//
// Workloads:
//  1. promise.create+complete     Promise<Int>() then succeed(i): allocation + one CAS + one exchange.
//  2. promise.create+callback+complete  as 1, with one inline callback registered before completion.
//  3. promise.map-chain           map ∘ map on a pending promise, then complete (3 promises, 2 callbacks).
//  4. ask.await                   sequential `try await ref.ask { .get($0) }` round trips.
//  5. ask.promise.await           sequential `try await ref.askPromise { .get($0) }.get()` round trips.
//  6. ask.promise.callback        sequential round trips completed by callback (no task per ask):
//                                 the next ask is sent from the callback of the previous one.
// Each reports ns/op over `iterations` after a warm-up of iterations/10.
import Synchronization
import Troupe
import TroupePromises

public enum PromisesBench {
    public struct Echo: ActorDefinition {
        public enum Message: Sendable { case get(Reply<Int>) }
        var n = 0
        public init() {}
        public mutating func receive(_ message: Message, context: ActorContext<Message>) {
            switch message { case .get(let reply): n &+= 1; reply.succeed(n) }
        }
    }

    static func nanos(_ start: ContinuousClock.Instant, _ count: Int) -> Double {
        let elapsed = ContinuousClock.now - start
        let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        return ns / Double(count)
    }

    public static func createComplete(_ count: Int) -> Double {
        var sink = 0
        let start = ContinuousClock.now
        for index in 0..<count {
            let promise = Promise<Int>()
            if promise.succeed(index) { sink &+= 1 }
        }
        precondition(sink == count)
        return nanos(start, count)
    }

    public static func createCallbackComplete(_ count: Int) -> Double {
        let sum = Atomic<Int>(0)
        let start = ContinuousClock.now
        for index in 0..<count {
            let promise = Promise<Int>()
            promise.whenComplete { sum.add((try? $0.get()) ?? 0, ordering: .relaxed) }
            promise.succeed(index)
        }
        let result = nanos(start, count)
        precondition(sum.load(ordering: .relaxed) == (0..<count).reduce(0, +))
        return result
    }

    public static func mapChain(_ count: Int) -> Double {
        var sink = 0
        let start = ContinuousClock.now
        for index in 0..<count {
            let promise = Promise<Int>()
            let mapped = promise.map { $0 + 1 }.map { $0 * 2 }
            promise.succeed(index)
            sink &+= (try? mapped.currentOutcome?.get()) ?? 0
        }
        let result = nanos(start, count)
        precondition(sink != 0)
        return result
    }

    public static func askAwait(_ ref: ActorRef<Echo.Message>, _ count: Int) async throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count { _ = try await ref.ask { .get($0) } }
        return nanos(start, count)
    }

    public static func askPromiseAwait(_ ref: ActorRef<Echo.Message>, _ count: Int) async throws -> Double {
        let start = ContinuousClock.now
        for _ in 0..<count { _ = try await ref.askPromise { .get($0) }.get() }
        return nanos(start, count)
    }

    public static func askPromiseCallback(_ ref: ActorRef<Echo.Message>, _ count: Int) async -> Double {
        let start = ContinuousClock.now
        let done = Promise<Void>()
        @Sendable func next(_ remaining: Int) {
            if remaining == 0 { done.succeed(()); return }
            ref.askPromise { .get($0) }.whenComplete { _ in next(remaining - 1) }
        }
        // Sends each ask from the previous reply's callback (the actor's worker thread): no task
        // per round trip. Recursion depth stays 1: the callback runs after the reply, not inside `tell`.
        next(count)
        _ = try? await done.get()
        return nanos(start, count)
    }

    /// Runs every workload and returns (name, ns/op) pairs.
    public static func run(iterations: Int = 1_000_000, askIterations: Int = 200_000) async throws -> [(String, Double)] {
        _ = createComplete(iterations / 10); _ = createCallbackComplete(iterations / 10); _ = mapChain(iterations / 10)
        var rows: [(String, Double)] = []
        rows.append(("promise.create+complete", createComplete(iterations)))
        rows.append(("promise.create+callback+complete", createCallbackComplete(iterations)))
        rows.append(("promise.map-chain(2)+complete", mapChain(iterations)))
        let system = ActorSystem(configuration: .init(workerCount: 2, pinWorkers: false))
        let ref = system.spawn(Echo())
        _ = try await askAwait(ref, askIterations / 10); _ = try await askPromiseAwait(ref, askIterations / 10)
        _ = await askPromiseCallback(ref, askIterations / 10)
        rows.append(("ask.await", try await askAwait(ref, askIterations)))
        rows.append(("ask.promise.await", try await askPromiseAwait(ref, askIterations)))
        rows.append(("ask.promise.callback", await askPromiseCallback(ref, askIterations)))
        await system.shutdown()
        return rows
    }
}
