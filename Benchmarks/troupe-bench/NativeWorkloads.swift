// Baselines built on Swift's native actors and structured concurrency.

// MARK: - Actors

/// FanIn (awaited form): producers call `add` directly.
private actor Accumulator {
    private var sum = 0

    func add(_ value: Int) {
        sum += value
    }

    func total() -> Int { sum }
}

/// PingPong: the responder.
private actor Pong {
    private var count = 0

    func ping() -> Int {
        count += 1
        return count
    }
}

/// PingPong: the requester, awaiting `Pong.ping()` from its own isolation.
private actor Ping {
    private let pong: Pong

    init(pong: Pong) { self.pong = pong }

    func run(roundTrips: Int) async -> Int {
        var last = 0
        for _ in 0..<roundTrips {
            last = await pong.ping()
        }
        return last
    }
}

/// IdleCPU / MemoryPerIdleActor: an actor with one word of state.
private actor IdleActor {
    private var value = 0

    func touch() { value += 1 }
}

// MARK: - Workloads

func nativeWorkloads(_ config: BenchConfig) -> [Measurement] {
    var results: [Measurement] = []

    if let m = benchmark(config, .counting, system: BenchSystem.swiftNative, size: config.baselineCountingMessages, { n in
        runBlocking { await nativeCounting(messages: n) }
    }) { results.append(m) }

    if let m = benchmark(config, .fanIn, system: BenchSystem.swiftNative, size: config.baselineFanInMessagesPerProducer, { n in
        runBlocking { await nativeFanInAwaited(producers: config.fanInProducers, messagesPerProducer: n) }
    }) { results.append(m) }

    if let m = benchmark(config, .fanIn, system: BenchSystem.swiftNativeAsyncStream, size: config.baselineFanInMessagesPerProducer, { n in
        runBlocking { await nativeFanInStream(producers: config.fanInProducers, messagesPerProducer: n) }
    }) { results.append(m) }

    if let m = benchmark(config, .pingPong, system: BenchSystem.swiftNative, size: config.baselinePingPongRoundTrips, { n in
        runBlocking { await nativePingPong(roundTrips: n) }
    }) { results.append(m) }

    if let m = measureIdleCPU(config, system: BenchSystem.swiftNative,
                              note: "each actor handled 1 call before the window", makeActors: { count in
        runBlocking {
            let actors = (0..<count).map { _ in IdleActor() }
            for actor in actors { await actor.touch() }
            return actors
        }
    }) { results.append(m) }

    if let m = measureMemoryPerActor(config, system: BenchSystem.swiftNative, note: "actor with one Int", makeActor: { _ in
        IdleActor()
    }) { results.append(m) }

    return results
}

/// One-way 1 → 1: this task yields N increments into an unbounded AsyncStream
/// drained by one consumer task (the fastest idiomatic one-way form).
private func nativeCounting(messages n: Int) async -> Measurement {
    let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .unbounded)
    let stopwatch = Stopwatch()
    let consumer = Task {
        var count = 0
        for await increment in stream { count += increment }
        return count
    }
    for _ in 0..<n {
        continuation.yield(1)
    }
    continuation.finish()
    let count = await consumer.value
    let (seconds, allocations) = stopwatch.stop()
    verifyEqual(count, n, .counting, BenchSystem.swiftNative, "final count")
    return Measurement(workload: .counting, system: BenchSystem.swiftNative, messages: n, seconds: seconds,
                       allocations: allocations, note: "AsyncStream(.unbounded) → consumer task")
}

/// N → 1, awaited: each producer task does `await accumulator.add(i)` for i in 1...m.
private func nativeFanInAwaited(producers: Int, messagesPerProducer m: Int) async -> Measurement {
    let accumulator = Accumulator()
    let stopwatch = Stopwatch()
    await withTaskGroup(of: Void.self) { group in
        for _ in 0..<producers {
            group.addTask {
                for value in 1...m {
                    await accumulator.add(value)
                }
            }
        }
    }
    let sum = await accumulator.total()
    let (seconds, allocations) = stopwatch.stop()
    verifyEqual(sum, producers * (m * (m + 1) / 2), .fanIn, BenchSystem.swiftNative, "sum")
    return Measurement(workload: .fanIn, system: BenchSystem.swiftNative, messages: producers * m, seconds: seconds,
                       allocations: allocations, note: "\(producers) tasks: await actor.add(x)")
}

/// N → 1, one-way: each producer task yields into one shared AsyncStream drained by one consumer task.
private func nativeFanInStream(producers: Int, messagesPerProducer m: Int) async -> Measurement {
    let (stream, continuation) = AsyncStream.makeStream(of: Int.self, bufferingPolicy: .unbounded)
    let stopwatch = Stopwatch()
    let consumer = Task {
        var sum = 0
        for await value in stream { sum += value }
        return sum
    }
    await withTaskGroup(of: Void.self) { group in
        for _ in 0..<producers {
            group.addTask {
                for value in 1...m {
                    continuation.yield(value)
                }
            }
        }
    }
    continuation.finish()
    let sum = await consumer.value
    let (seconds, allocations) = stopwatch.stop()
    verifyEqual(sum, producers * (m * (m + 1) / 2), .fanIn, BenchSystem.swiftNativeAsyncStream, "sum")
    return Measurement(workload: .fanIn, system: BenchSystem.swiftNativeAsyncStream, messages: producers * m,
                       seconds: seconds, allocations: allocations,
                       note: "\(producers) tasks yield into one AsyncStream → consumer task")
}

/// Request/response: the Ping actor awaits `pong.ping()` N times.
private func nativePingPong(roundTrips n: Int) async -> Measurement {
    let ping = Ping(pong: Pong())
    let stopwatch = Stopwatch()
    let last = await ping.run(roundTrips: n)
    let (seconds, allocations) = stopwatch.stop()
    verifyEqual(last, n, .pingPong, BenchSystem.swiftNative, "reply count")
    return Measurement(workload: .pingPong, system: BenchSystem.swiftNative, messages: n, seconds: seconds,
                       allocations: allocations, note: "actor awaits other actor's method")
}
