// Fibonacci (Savina `fib`): fib(n) computed by recursive actor creation: the actor for n > 1
// creates two children for n - 1 and n - 2, sends each a request, adds their two replies and
// replies to its own parent. Verified: the value equals the iterative fib(n). One unit is one
// actor (created, sent its request, replying once).
//
// Forms:
// - Troupe: `system.spawn(FibNode(parent: me)).tell(.request(k))`; replies are tells; each node
//   stops itself after replying.
// - Swift native (fastest idiomatic form): `await FibNode().compute(n - 1)` then the same for
//   n - 2, sequentially from the parent actor: creation plus an executor switch per node.
// - Swift native (async let): the parallel form, children computed concurrently as child tasks
//   (shown for reference; n - 3, about a quarter of the nodes).
// - Dispatch: one serial queue per node; requests and replies are `queue.async`.

import Dispatch
import Troupe

/// fib(n), iteratively.
private func fibonacci(_ n: Int) -> Int {
    var (a, b) = (0, 1)
    for _ in 0..<n { (a, b) = (b, a + b) }
    return a
}

/// Nodes (actors) of the recursion tree of fib(n).
func fibonacciNodes(_ n: Int) -> Int {
    var (small, large) = (1, 1)  // nodes(0), nodes(1)
    if n < 2 { return 1 }
    for _ in 2...n { (small, large) = (large, 1 + large + small) }
    return large
}

private struct FibNode: ActorDefinition {
    enum Message: Sendable {
        case request(Int)
        case response(Int)
    }
    let parent: ActorRef<Message>?
    let root: Completion<Int>?
    var pending = 2
    var sum = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .request(let n):
            if n < 2 {
                reply(n, context)
            } else {
                let me = context.ref
                context.system.spawn(FibNode(parent: me, root: nil)).tell(.request(n - 1))
                context.system.spawn(FibNode(parent: me, root: nil)).tell(.request(n - 2))
            }
        case .response(let value):
            sum += value
            pending -= 1
            if pending == 0 { reply(sum, context) }
        }
    }

    private func reply(_ value: Int, _ context: ActorContext<Message>) {
        if let parent { parent.tell(.response(value)) } else { root.unsafelyUnwrapped.complete(value) }
        context.stop()
    }
}

private actor NativeFibNode {
    func compute(_ n: Int) async -> Int {
        if n < 2 { return n }
        let left = await NativeFibNode().compute(n - 1)
        let right = await NativeFibNode().compute(n - 2)
        return left + right
    }

    func computeConcurrently(_ n: Int) async -> Int {
        if n < 2 { return n }
        async let left = NativeFibNode().computeConcurrently(n - 1)
        async let right = NativeFibNode().computeConcurrently(n - 2)
        return await left + right
    }
}

/// The native node on a Troupe serial executor of its own (a new one per node, as a new
/// actor per node in the other forms).
private actor ExecutorFibNode {
    nonisolated let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    init(system: ActorSystem) { executor = system.makeSerialExecutor() }

    func compute(_ n: Int, system: ActorSystem) async -> Int {
        if n < 2 { return n }
        let left = await ExecutorFibNode(system: system).compute(n - 1, system: system)
        let right = await ExecutorFibNode(system: system).compute(n - 2, system: system)
        return left + right
    }
}

private struct DispatchFibState {
    let parent: QueueActor<DispatchFibState>?
    var pending = 2
    var sum = 0
}

func fibonacciRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.fibonacci
    var rows = RowSet(config, workload)

    rows.measure(BenchSystem.swiftNative, family: .native) { n, row in
        runBlocking {
            let stopwatch = Stopwatch()
            let value = await NativeFibNode().compute(n)
            let window = stopwatch.stop()
            row.expect(value, fibonacci(n), "fib(\(n))")
            return row.measurement(
                window, units: fibonacciNodes(n), note: "fib(\(n)): await FibNode().compute(n - 1), then n - 2")
        }
    }

    let concurrent = "Swift native (async let)"
    rows.measure(concurrent, family: .native) { size, row in
        runBlocking {
            let n = config.quick ? size : max(2, size - 3)
            let stopwatch = Stopwatch()
            let value = await NativeFibNode().computeConcurrently(n)
            let window = stopwatch.stop()
            row.expect(value, fibonacci(n), "fib(\(n))")
            return row.measurement(
                window, units: fibonacciNodes(n), note: "fib(\(n)): async let children, in parallel")
        }
    }

    let onTroupe = BenchSystem.nativeOnTroupeExecutors
    rows.measure(onTroupe, family: .native) { n, row in
        let system = troupe.system
        return runBlocking(on: system.taskExecutor) {
            let stopwatch = Stopwatch()
            let value = await ExecutorFibNode(system: system).compute(n, system: system)
            let window = stopwatch.stop()
            row.expect(value, fibonacci(n), "fib(\(n))")
            return row.measurement(
                window, units: fibonacciNodes(n),
                note: "the native form, a new actor on a new TroupeSerialExecutor per node; \(troupe.workersNote)")
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { n, row in
        let done = Completion<Int>()
        // Runs on `node`'s queue.
        @Sendable func request(_ node: QueueActor<DispatchFibState>, _ k: Int) {
            if k < 2 { reply(node, k); return }
            QueueActor("bench.fib", DispatchFibState(parent: node)).tell { request($0, k - 1) }
            QueueActor("bench.fib", DispatchFibState(parent: node)).tell { request($0, k - 2) }
        }
        @Sendable func reply(_ node: QueueActor<DispatchFibState>, _ value: Int) {
            if let parent = node.state.parent {
                parent.tell { parent in
                    parent.state.sum += value
                    parent.state.pending -= 1
                    if parent.state.pending == 0 { reply(parent, parent.state.sum) }
                }
            } else {
                done.complete(value)
            }
        }
        let stopwatch = Stopwatch()
        QueueActor("bench.fib", DispatchFibState(parent: nil)).tell { request($0, n) }
        let value = done.wait("Fibonacci / Dispatch")
        let window = stopwatch.stop()
        row.expect(value, fibonacci(n), "fib(\(n))")
        return row.measurement(
            window, units: fibonacciNodes(n), note: "fib(\(n)): a serial queue per node")
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { n, row in
        let system = troupe.system
        let done = Completion<Int>()
        let deadLetters = system.deadLetters.total
        let stopwatch = Stopwatch()
        system.spawn(FibNode(parent: nil, root: done)).tell(.request(n))
        let value = done.wait("Fibonacci / Troupe")
        let window = stopwatch.stop()
        row.expect(value, fibonacci(n), "fib(\(n))")
        row.expect(system.deadLetters.total - deadLetters, 0, "dead letters")
        return row.measurement(
            window, units: fibonacciNodes(n), note: "fib(\(n)): spawn + tell per node; \(troupe.workersNote)")
    }

    return rows.measured
}
