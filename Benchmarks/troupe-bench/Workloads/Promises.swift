// PromiseCreate and PromiseAsk (issue 5): TroupePromises' cost, ported from the former
// Docs/promises-bench.swift.
//
// PromiseCreate (one unit is one promise, on the calling thread):
// - Troupe (create+complete): `Promise<Int>()` then `succeed(i)`: an allocation, a CAS, an exchange.
// - Troupe (create+callback+complete): as above with one inline callback registered first.
// - Troupe (map chain): `map ∘ map` on a pending promise, then complete (3 promises, 2 callbacks).
// PromiseAsk (one unit is one sequential round trip to an echo actor, from a task):
// - Troupe (try await ask): `try await ref.ask { .get($0) }`.
// - Troupe (askPromise + await): `try await ref.askPromise { .get($0) }.get()`.
// - Troupe (askPromise callback): each ask sent from the previous reply's callback (no task
//   per round trip).

import Synchronization
import Troupe
import TroupePromises

let promiseCreateSystems = ["Troupe (create+complete)", "Troupe (create+callback+complete)", "Troupe (map chain)"]
let promiseAskSystems = ["Troupe (try await ask)", "Troupe (askPromise + await)", "Troupe (askPromise callback)"]

private struct PromiseEcho: ActorDefinition {
    enum Message: Sendable { case get(Reply<Int>) }
    var n = 0
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .get(let reply): n &+= 1; reply.succeed(n)
        }
    }
}

func promiseCreateRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.promiseCreate
    var rows = RowSet(config, workload)
    /// Sum of 0 ..< n.
    func triangle(_ n: Int) -> Int { n * (n - 1) / 2 }

    let plain = promiseCreateSystems[0]
    rows.measure(plain, family: .troupe) { n, row in
        var completed = 0
        let stopwatch = Stopwatch()
        for index in 0..<n {
            let promise = Promise<Int>()
            if promise.succeed(index) { completed &+= 1 }
        }
        let window = stopwatch.stop()
        row.expect(completed, n, "promises completed")
        return row.measurement(
            window, units: n, note: "Promise<Int>() + succeed(i)")
    }

    let callback = promiseCreateSystems[1]
    rows.measure(callback, family: .troupe) { n, row in
        let sum = Atomic<Int>(0)
        let stopwatch = Stopwatch()
        for index in 0..<n {
            let promise = Promise<Int>()
            promise.whenComplete { sum.add((try? $0.get()) ?? 0, ordering: .relaxed) }
            promise.succeed(index)
        }
        let window = stopwatch.stop()
        row.expect(sum.load(ordering: .relaxed), triangle(n), "sum seen by callbacks")
        return row.measurement(
            window, units: n, note: "one inline whenComplete callback per promise")
    }

    let chain = promiseCreateSystems[2]
    rows.measure(chain, family: .troupe) { n, row in
        var sum = 0
        let stopwatch = Stopwatch()
        for index in 0..<n {
            let promise = Promise<Int>()
            let mapped = promise.map { $0 + 1 }.map { $0 * 2 }
            promise.succeed(index)
            sum &+= (try? mapped.currentOutcome?.get()) ?? -1_000_000_000
        }
        let window = stopwatch.stop()
        // Σ 2(i + 1) over 0 ..< n = n(n + 1).
        row.expect(sum, n * (n + 1), "sum of mapped values")
        return row.measurement(
            window, units: n, note: "map ∘ map on a pending promise, then succeed (3 promises)")
    }

    return rows.measured
}

func promiseAskRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.promiseAsk
    var rows = RowSet(config, workload)

    /// Spawns an echo actor, runs `body` on it from a task, verifies the echo counted `n` asks
    /// (its last reply is n; the extra verification ask returns n + 1), stops it.
    func run(
        _ row: Row, note: String, _ n: Int,
        _ body: @escaping @Sendable (ActorRef<PromiseEcho.Message>, Int) async throws -> Void
    ) -> Measurement {
        let ref = troupe.system.spawn(PromiseEcho())
        let result: (Window, Int)? = runBlocking("\(workload.rawValue) / \(row.system)") {
            do {
                let stopwatch = Stopwatch()
                try await body(ref, n)
                let window = stopwatch.stop()
                let last = try await ref.ask { .get($0) }
                return (window, last)
            } catch {
                return nil
            }
        }
        ref.stop()
        guard let (window, last) = result else {
            verify(false, "\(workload.rawValue) / \(row.system): an ask failed")
            fatalError()
        }
        row.expect(last, n + 1, "echo count after the asks + 1")
        return row.measurement(
            window, units: n, note: note)
    }

    let plain = promiseAskSystems[0]
    rows.measure(plain, family: .troupe) { n, row in
        run(row, note: "sequential try await ref.ask from a task", n) { ref, n in
            for _ in 0..<n { _ = try await ref.ask { .get($0) } }
        }
    }

    let awaited = promiseAskSystems[1]
    rows.measure(awaited, family: .troupe) { n, row in
        run(row, note: "sequential try await ref.askPromise{…}.get() from a task", n) { ref, n in
            for _ in 0..<n { _ = try await ref.askPromise { .get($0) }.get() }
        }
    }

    let callback = promiseAskSystems[2]
    rows.measure(callback, family: .troupe) { n, row in
        run(row, note: "next ask sent from the previous reply's callback", n) { ref, n in
            let done = Promise<Void>()
            @Sendable func next(_ remaining: Int) {
                if remaining == 0 { done.succeed(()); return }
                ref.askPromise { .get($0) }.whenComplete { _ in next(remaining - 1) }
            }
            next(n)
            try await done.get()
        }
    }

    return rows.measured
}
