// Troupe rows of the benchmark table.
//
// Forms (each written down because it decides what is measured):
// - Counting: a plain thread tells one counter actor N increments; the clock stops when the
//   counter has handled the N-th (it signals a semaphore).
// - FanIn: 8 plain threads tell one accumulator actor M values each.
// - PingPong: two actors; Ping tells Pong `.ping(replyTo: ping)`, Pong tells back `.pong`:
//   request/response between actors without blocking either. "Troupe (ask)" is the same
//   round trip awaited from a task with `try await pong.ask`.
// - IdleCPU / MemoryPerIdleActor: actors that each handled one message, then nothing.

import Dispatch
import Glibc
import Synchronization
import Troupe

/// Signals a semaphore when `expected` messages were handled.
private struct CountingActor: ActorDefinition {
    enum Message: Sendable { case increment }
    var count = 0
    let expected: Int
    let done: DispatchSemaphore

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        count += 1
        if count == expected { done.signal() }
    }
}

/// Counting, Savina's form: a producer actor sends the increments in chunks (re-telling
/// itself between chunks so the counter and other actors get turns).
private struct Producer: ActorDefinition {
    enum Message: Sendable { case produce }
    let counter: ActorRef<CountingActor.Message>
    var remaining: Int
    static let chunk = 4096

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        let count = min(remaining, Producer.chunk)
        for _ in 0..<count { counter.tell(.increment) }
        remaining -= count
        if remaining > 0 { context.ref.tell(.produce) } else { context.stop() }
    }
}

private struct Accumulator: ActorDefinition {
    enum Message: Sendable { case add(Int) }
    var sum = 0
    var received = 0
    let expected: Int
    let done: DispatchSemaphore
    let result: ResultCell

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        if case .add(let value) = message { sum &+= value }
        received += 1
        if received == expected {
            result.value.store(sum, ordering: .releasing)
            done.signal()
        }
    }
}

final class ResultCell: Sendable {
    let value = Atomic<Int>(0)
}

private struct Pong: ActorDefinition {
    enum Message: Sendable {
        case ping(replyTo: ActorRef<Ping.Message>)
        case ask(Reply<Int>)
    }
    var count = 0
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        count += 1
        switch message {
        case .ping(let replyTo): replyTo.tell(.pong(count))
        case .ask(let reply): reply.succeed(count)
        }
    }
}

private struct Ping: ActorDefinition {
    enum Message: Sendable { case start, pong(Int) }
    let pong: ActorRef<Pong.Message>
    let roundTrips: Int
    let done: DispatchSemaphore
    let result: ResultCell
    var completed = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .start:
            pong.tell(.ping(replyTo: context.ref))
        case .pong(let count):
            completed += 1
            if completed == roundTrips {
                result.value.store(count, ordering: .releasing)
                done.signal()
            } else {
                pong.tell(.ping(replyTo: context.ref))
            }
        }
    }
}

private struct Idle: ActorDefinition {
    enum Message: Sendable { case touch }
    var value = 0
    mutating func receive(_ message: Message, context: ActorContext<Message>) { value += 1 }
}

func troupeWorkloads(_ config: BenchConfig) -> [Measurement] {
    var results: [Measurement] = []
    // TROUPE_BENCH_WORKERS=N overrides the worker count (default: one per allowed CPU).
    let workerOverride = getenv("TROUPE_BENCH_WORKERS").flatMap { Int(String(cString: $0)) }
    let system = ActorSystem(configuration: .init(workerCount: workerOverride))
    defer { system.shutdownBlocking() }
    let name = BenchSystem.troupePrefix
    let workers = "\(system.workerCount) pinned workers"

    if let m = benchmark(config, .counting, system: name, size: config.countingMessages, { n in
        let done = DispatchSemaphore(value: 0)
        let counter = system.spawn(CountingActor(expected: n, done: done))
        let stopwatch = Stopwatch()
        for _ in 0..<n { counter.tell(.increment) }
        done.wait()
        let (seconds, allocations) = stopwatch.stop()
        counter.stop()
        return Measurement(workload: .counting, system: name, messages: n, seconds: seconds,
                           allocations: allocations, note: "producer: a plain thread; \(workers)")
    }) { results.append(m) }

    let actorProducer = "\(name) (actor producer)"
    if let m = benchmark(config, .counting, system: actorProducer, size: config.countingMessages, { n in
        let done = DispatchSemaphore(value: 0)
        let counter = system.spawn(CountingActor(expected: n, done: done))
        let producer = system.spawn(Producer(counter: counter, remaining: n))
        let stopwatch = Stopwatch()
        producer.tell(.produce)
        done.wait()
        let (seconds, allocations) = stopwatch.stop()
        counter.stop()
        return Measurement(workload: .counting, system: actorProducer, messages: n, seconds: seconds,
                           allocations: allocations, note: "producer: an actor, chunks of \(Producer.chunk)")
    }) { results.append(m) }

    if let m = benchmark(config, .fanIn, system: name, size: config.fanInMessagesPerProducer, { perProducer in
        let producers = config.fanInProducers
        let total = producers * perProducer
        let done = DispatchSemaphore(value: 0)
        let sum = ResultCell()
        let accumulator = system.spawn(Accumulator(expected: total, done: done, result: sum))
        let stopwatch = Stopwatch()
        DispatchQueue.concurrentPerform(iterations: producers) { producer in
            for i in 0..<perProducer { accumulator.tell(.add(producer &* perProducer &+ i)) }
        }
        done.wait()
        let (seconds, allocations) = stopwatch.stop()
        verifyEqual(sum.value.load(ordering: .acquiring), total * (total - 1) / 2, .fanIn, name, "sum")
        accumulator.stop()
        return Measurement(workload: .fanIn, system: name, messages: total, seconds: seconds,
                           allocations: allocations, note: "\(producers) producer threads")
    }) { results.append(m) }

    if let m = benchmark(config, .pingPong, system: name, size: config.pingPongRoundTrips, { n in
        let done = DispatchSemaphore(value: 0)
        let last = ResultCell()
        let pong = system.spawn(Pong())
        let ping = system.spawn(Ping(pong: pong, roundTrips: n, done: done, result: last))
        let stopwatch = Stopwatch()
        ping.tell(.start)
        done.wait()
        let (seconds, allocations) = stopwatch.stop()
        verifyEqual(last.value.load(ordering: .acquiring), n, .pingPong, name, "round trips seen by Pong")
        ping.stop()
        pong.stop()
        return Measurement(workload: .pingPong, system: name, messages: n, seconds: seconds,
                           allocations: allocations, note: "actor to actor, tell both ways")
    }) { results.append(m) }

    let askName = "\(name) (ask)"
    // Each ask crosses threads twice (task -> worker -> task), so it runs 1/20 of the size.
    if let m = benchmark(config, .pingPong, system: askName, size: max(1, config.pingPongRoundTrips / 20), { n in
        let pong = system.spawn(Pong())
        let stopwatch = Stopwatch()
        let last = runBlocking {
            var last = 0
            for _ in 0..<n { last = (try? await pong.ask { .ask($0) }) ?? -1 }
            return last
        }
        let (seconds, allocations) = stopwatch.stop()
        verifyEqual(last, n, .pingPong, askName, "round trips seen by Pong")
        pong.stop()
        return Measurement(workload: .pingPong, system: askName, messages: n, seconds: seconds,
                           allocations: allocations, note: "try await ask from a task")
    }) { results.append(m) }

    if let m = measureIdleCPU(config, system: name, note: workers, makeActors: { count in
        let actors = (0..<count).map { _ in system.spawn(Idle()) }
        for actor in actors { actor.tell(.touch) }
        return actors
    }) { results.append(m) }

    if let m = measureMemoryPerActor(config, system: name, makeActor: { _ in system.spawn(Idle()) }) {
        results.append(m)
    }
    return results
}
