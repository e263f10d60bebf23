// Counting (Savina `count`): a producer sends N increments one way to a counter; the clock
// stops when the counter has handled the N-th. One unit is one increment.
//
// Forms:
// - Troupe: a plain thread tells the counter actor N `.increment`s.
// - Troupe (actor producer), Savina's form: a producer actor tells them in chunks of 4096,
//   re-telling itself between chunks so other actors get turns.
// - Swift native (fastest idiomatic form): a producer actor awaits `counter.increment()` N times.
//   Swift has no one-way send between actors; an awaited call on an idle actor is an executor
//   switch on the same thread (~10 ns), far cheaper than any one-way form.
// - Swift native (AsyncStream), the fastest one-way form: the producer yields into an unbounded
//   AsyncStream drained by a consumer task (shown for reference; 1/10 of the native size).
// - Swift native on Troupe (1 executor / 2 executors): the native form's two actors on Troupe
//   serial executors, shared (no hop, compare with Swift native) or one each (every increment
//   is an awaited round trip through two mailboxes).
// - Dispatch: the producer thread posts `queue.async { count += 1 }` N times.

import Dispatch
import Troupe

private struct Counter: ActorDefinition {
    enum Message: Sendable { case increment }
    var count = 0
    let expected: Int
    let done: Completion<Int>

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        count += 1
        if count == expected { done.complete(count) }
    }
}

private struct Producer: ActorDefinition {
    enum Message: Sendable { case produce }
    let counter: ActorRef<Counter.Message>
    var remaining: Int
    static let chunk = 4096

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        let count = min(remaining, Producer.chunk)
        for _ in 0..<count { counter.tell(.increment) }
        remaining -= count
        if remaining > 0 { context.ref.tell(.produce) } else { context.stop() }
    }
}

private actor NativeCounter {
    private(set) var count = 0
    func increment() { count += 1 }
}

private actor NativeProducer {
    func run(_ counter: NativeCounter, increments: Int) async -> Int {
        for _ in 0..<increments { await counter.increment() }
        return await counter.count
    }
}

/// The native form's actors on Troupe serial executors.
private actor ExecutorCounter {
    nonisolated let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private(set) var count = 0
    init(executor: TroupeSerialExecutor) { self.executor = executor }
    func increment() { count += 1 }
}

private actor ExecutorProducer {
    nonisolated let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    /// Written after every call in the crossing form: the loop then needs the producer's
    /// isolation again after each `await`, so each increment hops there and back (with only a
    /// local loop, the optimizer drops the hop back and the loop runs on the counter's executor).
    private var sent = 0
    init(executor: TroupeSerialExecutor) { self.executor = executor }
    func run(_ counter: ExecutorCounter, increments: Int) async -> Int {
        for _ in 0..<increments { await counter.increment() }
        return await counter.count
    }
    func runCrossing(_ counter: ExecutorCounter, increments: Int) async -> Int {
        for _ in 0..<increments {
            await counter.increment()
            sent += 1
        }
        return await counter.count
    }
}

func countingRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.counting
    var rows = RowSet(config, workload)

    for shared in [true, false] {
        let name = shared ? BenchSystem.nativeOnTroupeOneExecutor : BenchSystem.nativeOnTroupeTwoExecutors
        rows.measure(name, family: shared ? .native : .dispatch) { n, row in
            let system = troupe.system
            let producerExecutor = system.makeSerialExecutor()
            let counter = ExecutorCounter(executor: shared ? producerExecutor : system.makeSerialExecutor())
            let producer = ExecutorProducer(executor: producerExecutor)
            return runBlocking {
                let stopwatch = Stopwatch()
                let count =
                    shared
                    ? await producer.run(counter, increments: n)
                    : await producer.runCrossing(counter, increments: n)
                let window = stopwatch.stop()
                row.expect(count, n, "final count")
                return row.measurement(
                    window, units: n,
                    note: shared
                        ? "producer and counter share one TroupeSerialExecutor: awaited calls without a hop"
                        : "producer and counter on TroupeSerialExecutors of their own; the producer writes its state after each call, so each increment hops there and back; \(troupe.workersNote)"
                )
            }
        }
    }

    rows.measure(BenchSystem.swiftNative, family: .native) { n, row in
        runBlocking {
            let counter = NativeCounter()
            let producer = NativeProducer()
            let stopwatch = Stopwatch()
            let count = await producer.run(counter, increments: n)
            let window = stopwatch.stop()
            row.expect(count, n, "final count")
            return row.measurement(
                window, units: n,
                note: "producer actor awaits counter.increment(): on the caller's thread, no hop, no message")
        }
    }

    let stream = oneWayNativeSystem
    rows.measure(stream, family: .native, divisor: 10) { n, row in
        runBlocking {
            let (values, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .unbounded)
            let stopwatch = Stopwatch()
            let consumer = Task {
                var count = 0
                for await increment in values { count += increment }
                return count
            }
            for _ in 0..<n { continuation.yield(1) }
            continuation.finish()
            let count = await consumer.value
            let window = stopwatch.stop()
            row.expect(count, n, "final count")
            return row.measurement(
                window, units: n, note: "one-way: yield into AsyncStream(.unbounded) → consumer task")
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { n, row in
        let counter = QueueActor("bench.counting", 0)
        let stopwatch = Stopwatch()
        for _ in 0..<n { counter.tell { $0.state += 1 } }
        let count = counter.queue.sync { counter.state }
        let window = stopwatch.stop()
        row.expect(count, n, "final count")
        return row.measurement(
            window, units: n, note: "thread posts queue.async { count += 1 }")
    }

    for variant in TroupeHost.introspectionVariants {
        let name = variant.system
        rows.measure(name, family: .troupe) { n, row in
            troupe.withRowSystem(variant) { system, systemNote in
                let done = Completion<Int>()
                let counter = system.spawn(Counter(expected: n, done: done))
                let stopwatch = Stopwatch()
                for _ in 0..<n { counter.tell(.increment) }
                let count = done.wait("Counting / \(name)")
                let window = stopwatch.stop()
                row.expect(count, n, "final count")
                counter.stop()
                return row.measurement(
                    window, units: n, note: "producer: a plain thread; \(systemNote)")
            }
        }
    }

    let actorProducer = "Troupe (actor producer)"
    rows.measure(actorProducer, family: .troupe) { n, row in
        let done = Completion<Int>()
        let counter = troupe.system.spawn(Counter(expected: n, done: done))
        let producer = troupe.system.spawn(Producer(counter: counter, remaining: n))
        let stopwatch = Stopwatch()
        producer.tell(.produce)
        let count = done.wait("Counting / Troupe (actor producer)")
        let window = stopwatch.stop()
        row.expect(count, n, "final count")
        counter.stop()
        return row.measurement(
            window, units: n, note: "Savina form: producer actor, chunks of \(Producer.chunk)")
    }

    return rows.measured
}
