// PubSubFanOut (issue 6): one publisher, `pubSubSubscribers` subscribers, ported from the former
// Docs/pubsub-bench.swift. One unit is one delivery (publications × subscribers); the window
// runs from the first publication until every subscriber has handled the last one.
//
// Forms:
// - Troupe: a TroupePubSub `Topic<Int>` with actor subscribers, published from the calling
//   (non-worker) thread; each subscriber sums what it gets.
// - Swift native (the idiomatic native fan-out, so the "× native" baseline): one AsyncStream per subscriber drained by its own task; the
//   publisher task yields every value to every continuation.

import Synchronization
import Troupe
import TroupePubSub

/// One broker for the shared system (a broker registers a stop observer that stays for the
/// life of the system, so it is made once, on first use).
private let pubSubBroker = Mutex<PubSub?>(nil)
private let pubSubTopicCounter = Atomic<Int>(0)

/// Counts the subscribers that have not yet seen the last publication, and their sums.
private final class FanOutTally: Sendable {
    let remaining: Atomic<Int>
    let checksum = SharedSum()
    let latch: Latch
    init(_ count: Int) {
        remaining = Atomic(count)
        latch = Latch(count: count)
    }
    func arrive(sum: Int) {
        checksum.add(sum)
        remaining.subtract(1, ordering: .releasing)
        latch.countDown()
    }
}

private struct FanOutSubscriber: ActorDefinition {
    let last: Int
    let tally: FanOutTally
    var sum = 0
    mutating func receive(_ message: Int, context: ActorContext<Int>) {
        sum &+= message
        if message == last { tally.arrive(sum: sum) }
    }
}

func pubSubFanOutRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.pubSubFanOut
    let subscribers = config.pubSubSubscribers
    var rows = RowSet(config, workload)
    @Sendable func expected(_ publications: Int) -> Int { subscribers * (publications * (publications + 1) / 2) }

    let stream = BenchSystem.swiftNative
    rows.measure(stream, family: .native) { publications, row in
        runBlocking {
            let tally = FanOutTally(subscribers)
            var continuations: [AsyncStream<Int>.Continuation] = []
            continuations.reserveCapacity(subscribers)
            var tasks: [Task<Void, Never>] = []
            for _ in 0..<subscribers {
                let (values, continuation) = AsyncStream<Int>.makeStream(bufferingPolicy: .unbounded)
                continuations.append(continuation)
                tasks.append(
                    Task {
                        var sum = 0
                        for await value in values {
                            sum &+= value
                            if value == publications { tally.arrive(sum: sum) }
                        }
                    })
            }
            let stopwatch = Stopwatch()
            for value in 1...publications {
                for continuation in continuations { continuation.yield(value) }
            }
            while tally.remaining.load(ordering: .acquiring) > 0 { await Task.yield() }
            let window = stopwatch.stop()
            for continuation in continuations { continuation.finish() }
            for task in tasks { await task.value }
            row.expect(tally.checksum.total, expected(publications), "checksum")
            return row.measurement(
                window, units: subscribers * publications, note: "\(subscribers) AsyncStreams, one task each")
        }
    }

    let system = BenchSystem.troupe
    rows.measure(system, family: .troupe) { publications, row in
        let broker = pubSubBroker.withLock { broker in
            if let broker { return broker }
            let made = PubSub(system: troupe.system)
            broker = made
            return made
        }
        let name = "fan-out-\(pubSubTopicCounter.wrappingAdd(1, ordering: .relaxed).newValue)"
        let topic: Topic<Int>
        let tally = FanOutTally(subscribers)
        var refs: [ActorRef<Int>] = []
        refs.reserveCapacity(subscribers)
        do {
            topic = try broker.topic(name, of: Int.self)
            for _ in 0..<subscribers {
                let ref = troupe.system.spawn(FanOutSubscriber(last: publications, tally: tally))
                refs.append(ref)
                try topic.subscribe(ref)
            }
        } catch {
            verify(false, "\(workload.rawValue) / \(system): set-up failed: \(error)")
            fatalError()
        }
        let stopwatch = Stopwatch()
        var delivered = 0
        for value in 1...publications { delivered &+= topic.publish(value) }
        tally.latch.wait("\(workload.rawValue) / \(system)")
        let window = stopwatch.stop()
        for ref in refs { ref.stop() }
        row.expect(delivered, subscribers * publications, "deliveries enqueued")
        row.expect(tally.checksum.total, expected(publications), "checksum")
        return row.measurement(
            window, units: subscribers * publications,
            note: "\(subscribers) actor subscribers, publish from a plain thread")
    }

    return rows.measured
}
