// Fork-join workloads of Savina.
//
// ForkJoinThroughput (`fjthrput`): one sender sends N messages to each of 60 actors, round
// robin (message m to every actor, then m + 1); each actor folds its messages into an
// order-sensitive checksum (Savina's `performComputation`, reduced to a multiply-add). Verified:
// every actor's checksum equals the fold of 0..<N, so no message was lost, duplicated or
// reordered. One unit is one message.
//
// ForkJoinCreation (`fjcreate`): N actors are each created, sent one message, do the same small
// computation, report it and stop. Verified: all N reported, and the sum of their results. One
// unit is one actor (create + one message + stop).
//
// Forms:
// - Troupe: a plain thread tells (fjthrput) or spawns and tells (fjcreate); fjcreate's actors
//   add their result to an atomic, count down a latch and stop themselves.
// - Swift native (fastest idiomatic form): one task awaits `actor.work(m)` for every message
//   (fjthrput), or creates an actor and awaits its `work(i)` (fjcreate). Awaited calls on idle
//   actors are executor switches on one thread; a task per message would cost 3–10 µs.
// - Dispatch: one serial queue per actor; the main thread posts `queue.async`.

import Dispatch
import Troupe

/// The checksum one fjthrput actor must end with.
private func expectedChecksum(_ messages: Int) -> Int {
    var checksum = 0
    for m in 0..<messages { checksum = mix(checksum, m) }
    return checksum
}

private struct ThroughputWorker: ActorDefinition {
    enum Message: Sendable { case work(Int) }
    let expected: Int
    let finished: Latch
    let checksums: SharedSum
    var count = 0
    var checksum = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        guard case .work(let value) = message else { return }
        checksum = mix(checksum, value)
        count += 1
        if count == expected {
            checksums.add(checksum)
            finished.countDown()
        }
    }
}

/// The native worker's interface, so that both native forms run through `roundRobin`.
private protocol NativeThroughputWorking: Actor {
    func work(_ value: Int)
    var checksum: Int { get }
}

/// The native fjthrput form: one task awaits `worker.work(m)` round robin, then sums the
/// checksums. Returns the measured window and the sum.
private func roundRobin<Worker: NativeThroughputWorking>(_ workers: [Worker], perActor: Int) async -> (Window, Int) {
    let stopwatch = Stopwatch()
    for value in 0..<perActor {
        for worker in workers { await worker.work(value) }
    }
    var total = 0
    for worker in workers { total &+= await worker.checksum }
    return (stopwatch.stop(), total)
}

private actor NativeThroughputWorker: NativeThroughputWorking {
    private(set) var checksum = 0
    func work(_ value: Int) { checksum = mix(checksum, value) }
}

/// The native worker on a Troupe serial executor of its own.
private actor ExecutorThroughputWorker: NativeThroughputWorking {
    nonisolated let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private(set) var checksum = 0
    init(executor: TroupeSerialExecutor) { self.executor = executor }
    func work(_ value: Int) { checksum = mix(checksum, value) }
}

private struct CreatedWorker: ActorDefinition {
    enum Message: Sendable { case work(Int) }
    let finished: Latch
    let results: SharedSum

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        guard case .work(let value) = message else { return }
        results.add(mix(0, value))
        finished.countDown()
        context.stop()
    }
}

private actor NativeCreatedWorker {
    func work(_ value: Int) -> Int { mix(0, value) }
}

func forkJoinThroughputRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.forkJoinThroughput
    let actors = config.forkJoinActors
    var rows = RowSet(config, workload)
    @Sendable func check(_ total: Int, _ perActor: Int, _ row: Row) {
        row.expect(total, expectedChecksum(perActor) &* actors, "sum of the actors' checksums")
    }

    rows.measure(BenchSystem.swiftNative, family: .native) { perActor, row in
        runBlocking {
            let (window, total) = await roundRobin(
                (0..<actors).map { _ in NativeThroughputWorker() }, perActor: perActor)
            check(total, perActor, row)
            return row.measurement(
                window, units: actors * perActor, note: "one task awaits worker.work(m) round robin")
        }
    }

    let onTroupe = BenchSystem.nativeOnTroupeExecutors
    rows.measure(onTroupe, family: .native) { perActor, row in
        let system = troupe.system
        return runBlocking(on: system.taskExecutor) {
            let workers = (0..<actors).map { _ in ExecutorThroughputWorker(executor: system.makeSerialExecutor()) }
            let (window, total) = await roundRobin(workers, perActor: perActor)
            check(total, perActor, row)
            return row.measurement(
                window, units: actors * perActor,
                note:
                    "the native form: one task on the task executor awaits worker.work(m) round robin, each worker on a TroupeSerialExecutor; \(troupe.workersNote)"
            )
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { perActor, row in
        let workers = (0..<actors).map { QueueActor("bench.fjt\($0)", 0) }
        let stopwatch = Stopwatch()
        for value in 0..<perActor {
            for worker in workers { worker.tell { $0.state = mix($0.state, value) } }
        }
        var total = 0
        for worker in workers { total &+= worker.queue.sync { worker.state } }
        let window = stopwatch.stop()
        check(total, perActor, row)
        return row.measurement(
            window, units: actors * perActor, note: "main thread posts queue.async round robin")
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { perActor, row in
        let system = troupe.system
        let finished = Latch(count: actors)
        let checksums = SharedSum()
        let workers = (0..<actors).map { _ in
            system.spawn(ThroughputWorker(expected: perActor, finished: finished, checksums: checksums))
        }
        let stopwatch = Stopwatch()
        for value in 0..<perActor {
            for worker in workers { worker.tell(.work(value)) }
        }
        finished.wait("ForkJoinThroughput / Troupe")
        let window = stopwatch.stop()
        check(checksums.total, perActor, row)
        for worker in workers { worker.stop() }
        return row.measurement(
            window, units: actors * perActor, note: "a plain thread tells round robin; \(troupe.workersNote)")
    }

    return rows.measured
}

func forkJoinCreationRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.forkJoinCreation
    var rows = RowSet(config, workload)
    @Sendable func expectedSum(_ n: Int) -> Int { (0..<n).reduce(0) { $0 &+ mix(0, $1) } }

    rows.measure(BenchSystem.swiftNative, family: .native) { n, row in
        runBlocking {
            let stopwatch = Stopwatch()
            var total = 0
            for value in 0..<n {
                let worker = NativeCreatedWorker()
                total &+= await worker.work(value)
            }
            let window = stopwatch.stop()
            row.expect(total, expectedSum(n), "sum of results")
            return row.measurement(
                window, units: n, note: "one task: create actor, await work(i), release it")
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { n, row in
        let finished = Latch(count: n)
        let results = SharedSum()
        let stopwatch = Stopwatch()
        for value in 0..<n {
            let worker = QueueActor("bench.fjc", 0)
            worker.tell { _ in
                results.add(mix(0, value))
                finished.countDown()
            }
        }
        finished.wait("ForkJoinCreation / Dispatch")
        let window = stopwatch.stop()
        row.expect(results.total, expectedSum(n), "sum of results")
        return row.measurement(
            window, units: n, note: "new serial queue + one async per actor")
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { n, row in
        let system = troupe.system
        let finished = Latch(count: n)
        let results = SharedSum()
        let stopwatch = Stopwatch()
        for value in 0..<n {
            system.spawn(CreatedWorker(finished: finished, results: results)).tell(.work(value))
        }
        finished.wait("ForkJoinCreation / Troupe")
        let window = stopwatch.stop()
        row.expect(results.total, expectedSum(n), "sum of results")
        return row.measurement(
            window, units: n, note: "a plain thread spawns + tells; the actor stops itself")
    }

    return rows.measured
}
