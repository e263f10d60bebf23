// Baselines built on libdispatch: one serial DispatchQueue per "actor",
// its state touched only from blocks running on that queue.

import Dispatch

// Mutated only by blocks running on the one serial queue that owns it.
private final class QueueState: @unchecked Sendable {
    var value = 0
}

func dispatchWorkloads(_ config: BenchConfig) -> [Measurement] {
    var results: [Measurement] = []

    if let m = benchmark(config, .counting, system: BenchSystem.dispatch, size: config.baselineCountingMessages, { n in
        dispatchCounting(messages: n)
    }) { results.append(m) }

    if let m = benchmark(config, .fanIn, system: BenchSystem.dispatch, size: config.baselineFanInMessagesPerProducer, { n in
        dispatchFanIn(producers: config.fanInProducers, messagesPerProducer: n)
    }) { results.append(m) }

    if let m = benchmark(config, .pingPong, system: BenchSystem.dispatch, size: config.baselinePingPongRoundTrips, { n in
        dispatchPingPong(roundTrips: n)
    }) { results.append(m) }

    if let m = measureIdleCPU(config, system: BenchSystem.dispatch,
                              note: "serial queue + state; each ran 1 block before the window", makeActors: { count in
        let actors = (0..<count).map { _ in (queue: DispatchQueue(label: "bench.idle"), state: QueueState()) }
        let group = DispatchGroup()
        for actor in actors {
            let state = actor.state
            actor.queue.async(group: group) { state.value += 1 }
        }
        group.wait()
        return actors
    }) { results.append(m) }

    if let m = measureMemoryPerActor(config, system: BenchSystem.dispatch, note: "serial queue + state object", makeActor: { _ in
        (queue: DispatchQueue(label: "bench.idle"), state: QueueState())
    }) { results.append(m) }

    return results
}

/// One-way 1 → 1: this thread posts N increments with `queue.async`.
private func dispatchCounting(messages n: Int) -> Measurement {
    let queue = DispatchQueue(label: "bench.counting")
    let state = QueueState()
    let stopwatch = Stopwatch()
    for _ in 0..<n {
        queue.async { state.value += 1 }
    }
    let count = queue.sync { state.value }
    let (seconds, allocations) = stopwatch.stop()
    verifyEqual(count, n, .counting, BenchSystem.dispatch, "final count")
    return Measurement(workload: .counting, system: BenchSystem.dispatch, messages: n, seconds: seconds,
                       allocations: allocations, note: "queue.async { count += 1 }")
}

/// N → 1: one serial producer queue per producer, each posting m blocks to one target queue.
private func dispatchFanIn(producers: Int, messagesPerProducer m: Int) -> Measurement {
    let target = DispatchQueue(label: "bench.fanin.target")
    let state = QueueState()
    let producerQueues = (0..<producers).map { DispatchQueue(label: "bench.fanin.producer\($0)") }
    let group = DispatchGroup()
    let stopwatch = Stopwatch()
    for queue in producerQueues {
        queue.async(group: group) {
            for value in 1...m {
                target.async { state.value += value }
            }
        }
    }
    group.wait()
    let sum = target.sync { state.value }
    let (seconds, allocations) = stopwatch.stop()
    verifyEqual(sum, producers * (m * (m + 1) / 2), .fanIn, BenchSystem.dispatch, "sum")
    return Measurement(workload: .fanIn, system: BenchSystem.dispatch, messages: producers * m, seconds: seconds,
                       allocations: allocations, note: "\(producers) producer queues → target.async")
}

// `pings` is touched only on pingQueue and `pongs` only on pongQueue; each round trip's
// asyncs order the accesses, and `done` orders the final reads.
private final class PingPongState: @unchecked Sendable {
    let pingQueue = DispatchQueue(label: "bench.ping")
    let pongQueue = DispatchQueue(label: "bench.pong")
    let done = DispatchSemaphore(value: 0)
    let roundTrips: Int
    var pings = 0
    var pongs = 0

    init(roundTrips: Int) { self.roundTrips = roundTrips }

    /// Runs on pingQueue: sends the next request, or finishes.
    func sendPing() {
        if pings == roundTrips {
            done.signal()
            return
        }
        pings += 1
        pongQueue.async {
            self.pongs += 1
            self.pingQueue.async { self.sendPing() }
        }
    }
}

/// Request/response: ping queue asyncs to pong queue, which asyncs back; N round trips.
private func dispatchPingPong(roundTrips n: Int) -> Measurement {
    let state = PingPongState(roundTrips: n)
    let stopwatch = Stopwatch()
    state.pingQueue.async { state.sendPing() }
    state.done.wait()
    let (seconds, allocations) = stopwatch.stop()
    verifyEqual(state.pongs, n, .pingPong, BenchSystem.dispatch, "pong count")
    return Measurement(workload: .pingPong, system: BenchSystem.dispatch, messages: n, seconds: seconds,
                       allocations: allocations, note: "ping.async ⇄ pong.async, semaphore at end")
}
