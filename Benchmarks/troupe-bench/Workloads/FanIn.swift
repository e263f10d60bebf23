// FanIn (CAF's N:1 mailbox test): several producers send to one consumer, which sums the
// values. One unit is one message.
//
// Forms:
// - Troupe: 8 plain threads tell one accumulator actor M values each.
// - Swift native (fastest idiomatic form): 8 tasks each await `accumulator.add(x)` M times.
// - Swift native (AsyncStream), the one-way form: 8 tasks yield into one AsyncStream drained by
//   a consumer task (1/10 of the native size).
// - Dispatch: 8 producer queues each post M `target.async { sum += x }`.

import Dispatch
import Troupe

private struct Accumulator: ActorDefinition {
    enum Message: Sendable { case add(Int) }
    var sum = 0
    var received = 0
    let expected: Int
    let done: Completion<Int>

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        if case .add(let value) = message { sum &+= value }
        received += 1
        if received == expected { done.complete(sum) }
    }
}

private actor NativeAccumulator {
    private(set) var sum = 0
    func add(_ value: Int) { sum &+= value }
}

func fanInRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.fanIn
    let producers = config.fanInProducers
    var rows: [Measurement] = []
    /// Producer p sends p·m ..< (p+1)·m, so the total is the sum of 0 ..< producers·m.
    @Sendable func expectedSum(_ m: Int) -> Int { let total = producers * m; return total * (total - 1) / 2 }

    if let m = benchmark(
        config, workload, system: BenchSystem.swiftNative, family: .native,
        { perProducer in
            runBlocking {
                let accumulator = NativeAccumulator()
                let stopwatch = Stopwatch()
                await withTaskGroup(of: Void.self) { group in
                    for producer in 0..<producers {
                        group.addTask {
                            for i in 0..<perProducer { await accumulator.add(producer &* perProducer &+ i) }
                        }
                    }
                }
                let sum = await accumulator.sum
                let (seconds, allocations) = stopwatch.stop()
                verifyEqual(sum, expectedSum(perProducer), workload, BenchSystem.swiftNative, "sum")
                return Measurement(
                    workload: workload, system: BenchSystem.swiftNative, messages: producers * perProducer,
                    seconds: seconds, allocations: allocations, note: "\(producers) tasks await accumulator.add(x)")
            }
        })
    {
        rows.append(m)
    }

    let stream = oneWayNativeSystem
    if let m = benchmark(
        config, workload, system: stream, family: .native, divisor: 10,
        { perProducer in
            runBlocking {
                let (values, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .unbounded)
                let stopwatch = Stopwatch()
                let consumer = Task {
                    var sum = 0
                    for await value in values { sum &+= value }
                    return sum
                }
                await withTaskGroup(of: Void.self) { group in
                    for producer in 0..<producers {
                        group.addTask {
                            for i in 0..<perProducer { continuation.yield(producer &* perProducer &+ i) }
                        }
                    }
                }
                continuation.finish()
                let sum = await consumer.value
                let (seconds, allocations) = stopwatch.stop()
                verifyEqual(sum, expectedSum(perProducer), workload, stream, "sum")
                return Measurement(
                    workload: workload, system: stream, messages: producers * perProducer, seconds: seconds,
                    allocations: allocations, note: "one-way: \(producers) tasks yield into one AsyncStream")
            }
        })
    {
        rows.append(m)
    }

    if let m = benchmark(
        config, workload, system: BenchSystem.dispatch, family: .dispatch,
        { perProducer in
            let target = QueueActor("bench.fanin.target", 0)
            let producerQueues = (0..<producers).map { DispatchQueue(label: "bench.fanin.producer\($0)") }
            let group = DispatchGroup()
            let stopwatch = Stopwatch()
            for (producer, queue) in producerQueues.enumerated() {
                queue.async(group: group) {
                    for i in 0..<perProducer {
                        let value = producer &* perProducer &+ i
                        target.tell { $0.state &+= value }
                    }
                }
            }
            group.wait()
            let sum = target.queue.sync { target.state }
            let (seconds, allocations) = stopwatch.stop()
            verifyEqual(sum, expectedSum(perProducer), workload, BenchSystem.dispatch, "sum")
            return Measurement(
                workload: workload, system: BenchSystem.dispatch, messages: producers * perProducer,
                seconds: seconds, allocations: allocations, note: "\(producers) producer queues → target.async")
        })
    {
        rows.append(m)
    }

    if let m = benchmark(
        config, workload, system: BenchSystem.troupe, family: .troupe,
        { perProducer in
            let done = Completion<Int>()
            let accumulator = troupe.system.spawn(Accumulator(expected: producers * perProducer, done: done))
            let stopwatch = Stopwatch()
            let threads = (0..<producers).map { producer in
                startThread {
                    for i in 0..<perProducer { accumulator.tell(.add(producer &* perProducer &+ i)) }
                }
            }
            for thread in threads { joinThread(thread) }
            let sum = done.wait("FanIn / Troupe")
            let (seconds, allocations) = stopwatch.stop()
            verifyEqual(sum, expectedSum(perProducer), workload, BenchSystem.troupe, "sum")
            accumulator.stop()
            return Measurement(
                workload: workload, system: BenchSystem.troupe, messages: producers * perProducer,
                seconds: seconds, allocations: allocations, note: "\(producers) producer threads")
        })
    {
        rows.append(m)
    }

    return rows
}
