// Pub/sub fan-out workloads for troupe-bench (issue 6). Self-contained: needs `Troupe`,
// `TroupePubSub` (add it to troupe-bench's dependencies) and Synchronization.
//
// One publisher publishes `publications` Ints to a topic with `subscribers` subscribers;
// each subscriber counts what it gets. Measured: publish start → every subscriber has
// handled the last publication. Reported as deliveries per second (publications ×
// subscribers / seconds), beside the Swift-native equivalent: one AsyncStream per subscriber,
// each drained by its own Task, the publisher yielding every value to every continuation.
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Troupe
import TroupePubSub

/// The result of one fan-out run.
struct FanOutResult: Sendable {
    let name: String
    let subscribers: Int
    let publications: Int
    let seconds: Double
    var deliveries: Int { subscribers * publications }
    var deliveriesPerSecond: Double { Double(deliveries) / seconds }
    var publicationsPerSecond: Double { Double(publications) / seconds }
}

/// Counts down the subscribers that still wait for the last publication.
final class FanOutLatch: Sendable {
    let remaining: Atomic<Int>
    let checksum = Atomic<Int>(0)
    init(_ count: Int) { remaining = Atomic(count) }
    func arrive(sum: Int) {
        checksum.add(sum, ordering: .relaxed)
        remaining.subtract(1, ordering: .releasing)
    }
    /// Spins (with short sleeps) until every subscriber arrived.
    func wait() { while remaining.load(ordering: .acquiring) > 0 { usleep(50) } }
}

/// A subscriber actor: sums what it receives, arrives at the latch on the last value.
struct FanOutSubscriber: ActorDefinition {
    let last: Int
    let latch: FanOutLatch
    var sum = 0
    mutating func receive(_ message: Int, context: ActorContext<Int>) {
        sum &+= message
        if message == last { latch.arrive(sum: sum) }
    }
}

@inline(__always)
func fanOutNow() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// Troupe: a `Topic<Int>` with `subscribers` actor subscribers, published from the calling
/// (non-worker) thread.
func pubSubFanOutTroupe(subscribers: Int = 1_000, publications: Int = 2_000, workers: Int? = nil) -> FanOutResult {
    let system = ActorSystem(configuration: .init(name: "pubsub-bench", workerCount: workers))
    defer { system.shutdownBlocking() }
    let pubsub = PubSub(system: system)
    let topic = try! pubsub.topic("fan-out", of: Int.self)
    let latch = FanOutLatch(subscribers)
    for _ in 0..<subscribers {
        try! topic.subscribe(system.spawn(FanOutSubscriber(last: publications, latch: latch)))
    }
    let start = fanOutNow()
    for value in 1...publications { topic.publish(value) }
    latch.wait()
    let seconds = fanOutNow() - start
    let expected = subscribers * (publications * (publications + 1) / 2)
    precondition(latch.checksum.load(ordering: .relaxed) == expected, "pub/sub fan-out lost or duplicated deliveries")
    return FanOutResult(name: "troupe-pubsub", subscribers: subscribers, publications: publications, seconds: seconds)
}

/// Swift-native: one AsyncStream per subscriber, each consumed by a Task.
func pubSubFanOutAsyncStream(subscribers: Int = 1_000, publications: Int = 2_000) async -> FanOutResult {
    let latch = FanOutLatch(subscribers)
    var continuations: [AsyncStream<Int>.Continuation] = []
    continuations.reserveCapacity(subscribers)
    var tasks: [Task<Void, Never>] = []
    for _ in 0..<subscribers {
        let (stream, continuation) = AsyncStream<Int>.makeStream(bufferingPolicy: .unbounded)
        continuations.append(continuation)
        tasks.append(Task {
            var sum = 0
            for await value in stream {
                sum &+= value
                if value == publications { latch.arrive(sum: sum) }
            }
        })
    }
    let start = fanOutNow()
    for value in 1...publications {
        for continuation in continuations { continuation.yield(value) }
    }
    while latch.remaining.load(ordering: .acquiring) > 0 { await Task.yield() }
    let seconds = fanOutNow() - start
    for continuation in continuations { continuation.finish() }
    for task in tasks { await task.value }
    let expected = subscribers * (publications * (publications + 1) / 2)
    precondition(latch.checksum.load(ordering: .relaxed) == expected, "AsyncStream fan-out lost or duplicated deliveries")
    return FanOutResult(name: "asyncstream", subscribers: subscribers, publications: publications, seconds: seconds)
}

/// Runs both, `rounds` times each, and prints one line per run.
func runPubSubFanOutBenchmarks(subscribers: Int = 1_000, publications: Int = 2_000, rounds: Int = 3) async {
    func show(_ result: FanOutResult) {
        let millions = (result.deliveriesPerSecond / 1e6 * 100).rounded() / 100
        let pubs = Int(result.publicationsPerSecond.rounded())
        print("fan-out \(result.name): \(result.subscribers) subscribers x \(result.publications) publications: "
            + "\(millions) M deliveries/s (\(pubs) publications/s, \(Int((result.seconds * 1000).rounded())) ms)")
    }
    _ = pubSubFanOutTroupe(subscribers: subscribers, publications: publications / 10)  // warm-up
    for _ in 0..<rounds { show(pubSubFanOutTroupe(subscribers: subscribers, publications: publications)) }
    _ = await pubSubFanOutAsyncStream(subscribers: subscribers, publications: publications / 10)
    for _ in 0..<rounds { show(await pubSubFanOutAsyncStream(subscribers: subscribers, publications: publications)) }
}
