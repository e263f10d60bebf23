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
    var rows = RowSet(config, workload)
    /// Producer p sends p·m ..< (p+1)·m, so the total is the sum of 0 ..< producers·m.
    @Sendable func expectedSum(_ m: Int) -> Int { let total = producers * m; return total * (total - 1) / 2 }

    rows.measure(BenchSystem.swiftNative, family: .native) { perProducer, row in
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
            let window = stopwatch.stop()
            row.expect(sum, expectedSum(perProducer), "sum")
            return row.measurement(
                window, units: producers * perProducer, note: "\(producers) tasks await accumulator.add(x)")
        }
    }

    let stream = oneWayNativeSystem
    rows.measure(stream, family: .native, divisor: 10) { perProducer, row in
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
            let window = stopwatch.stop()
            row.expect(sum, expectedSum(perProducer), "sum")
            return row.measurement(
                window, units: producers * perProducer, note: "one-way: \(producers) tasks yield into one AsyncStream")
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { perProducer, row in
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
        let window = stopwatch.stop()
        row.expect(sum, expectedSum(perProducer), "sum")
        return row.measurement(
            window, units: producers * perProducer, note: "\(producers) producer queues → target.async")
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { perProducer, row in
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
        let window = stopwatch.stop()
        row.expect(sum, expectedSum(perProducer), "sum")
        accumulator.stop()
        return row.measurement(
            window, units: producers * perProducer, note: "\(producers) producer threads")
    }

    return rows.measured
}
