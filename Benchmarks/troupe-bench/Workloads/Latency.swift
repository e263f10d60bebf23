// Latency percentiles (p50, p99, p99.9) of single round trips, recorded into an HdrHistogram
// (1 ns – 100 s, 3 significant digits) with CLOCK_MONOTONIC read before and after each one.
// The clock reads (~20 ns each) are included in every figure, for every system alike.
//
// PingPongLatency: one round trip between two actors, timed by the requester.
// - Troupe: Ping tells Pong, Pong tells back (as in PingPong).
// - Swift native: the Ping actor awaits `pong.ping()`.
//
// AskLatency: one request/response from a caller that is not the target actor.
// - Swift native: a task awaits `actor.ping()` (the native "ask").
// - Troupe (actor ask): an actor asks with `context.ask(pong, …) { .answer($0) }`; the answer
//   comes back as a message.
// - Troupe (ask from a task): a task on Swift's global executor awaits
//   `try await pong.ask { .ask($0) }` (1/4 of the size).
// - Troupe (ask from a task on its executor): the same loop in a task that prefers the system's
//   task executor, so the reply resumes it on the replying worker.
// - Troupe (askBlocking): a plain thread blocks in `pong.askBlocking { .ask($0) }` (1/4).
// The actor ask and the ask from a task on the executor meet an idle Pong, so the asking thread
// runs Pong's turn in place (direct hand-off). Beside them, the same two asks:
// - "target busy": a `.busy` message is told to Pong just before each ask, so Pong is already
//   scheduled and the ask is queued behind it (the fall-back; the figure includes the tell and
//   Pong's handling of `.busy`);
// - "hand-off off": a system of its own with `directHandOff: false` (every ask queued and, from a
//   task, the task suspended and resumed by the worker that replies: the path before hand-off).

import CBenchSupport
import Dispatch
import Histogram
import Troupe

private struct LatencyResult: Sendable {
    var histogram: Histogram<UInt64>
    var last: Int
    var failures = 0
}

private struct Pong: ActorDefinition {
    enum Message: Sendable {
        case ping(replyTo: ActorRef<Ping.Message>)
        case ask(Reply<Int>)
        /// Keeps Pong scheduled when an ask arrives ("target busy" rows); not counted.
        case busy
    }
    var count = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .ping(let replyTo):
            count += 1
            replyTo.tell(.pong(count))
        case .ask(let reply):
            count += 1
            reply.succeed(count)
        case .busy: break
        }
    }
}

private struct Ping: ActorDefinition {
    enum Message: Sendable { case start, pong(Int) }
    let pong: ActorRef<Pong.Message>
    var remaining: Int
    let done: Completion<LatencyResult>
    var histogram = makeLatencyHistogram()
    var sentAt: UInt64 = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .start:
            sentAt = CBenchSupport_now_ns()
            pong.tell(.ping(replyTo: context.ref))
        case .pong(let count):
            histogram.record(CBenchSupport_now_ns() &- sentAt)
            remaining -= 1
            if remaining == 0 {
                done.complete(LatencyResult(histogram: histogram, last: count))
            } else {
                sentAt = CBenchSupport_now_ns()
                pong.tell(.ping(replyTo: context.ref))
            }
        }
    }
}

private struct Asker: ActorDefinition {
    enum Message: Sendable { case start, answer(Result<Int, AskError>) }
    let pong: ActorRef<Pong.Message>
    /// Tells Pong `.busy` before each ask ("target busy" rows).
    var busy = false
    var remaining: Int
    let done: Completion<LatencyResult>
    var histogram = makeLatencyHistogram()
    var sentAt: UInt64 = 0
    var last = 0
    var failures = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .start:
            ask(context)
        case .answer(let result):
            histogram.record(CBenchSupport_now_ns() &- sentAt)
            switch result {
            case .success(let count): last = count
            case .failure: failures += 1
            }
            remaining -= 1
            if remaining == 0 {
                done.complete(LatencyResult(histogram: histogram, last: last, failures: failures))
            } else {
                ask(context)
            }
        }
    }

    private mutating func ask(_ context: ActorContext<Message>) {
        sentAt = CBenchSupport_now_ns()
        if busy { pong.tell(.busy) }
        context.ask(pong, { .ask($0) }, then: { .answer($0) })
    }
}

private actor NativePong {
    private var count = 0
    func ping() -> Int {
        count += 1
        return count
    }
}

private actor NativePing {
    private let pong = NativePong()

    func run(_ roundTrips: Int) async -> LatencyResult {
        var histogram = makeLatencyHistogram()
        var last = 0
        for _ in 0..<roundTrips {
            let start = CBenchSupport_now_ns()
            last = await pong.ping()
            histogram.record(CBenchSupport_now_ns() &- start)
        }
        return LatencyResult(histogram: histogram, last: last)
    }
}

private func latencyRow(_ row: Row, _ n: Int, _ note: String, _ body: () -> LatencyResult) -> Measurement {
    let stopwatch = Stopwatch()
    let result = body()
    let window = stopwatch.stop()
    row.expect(result.failures, 0, "failed requests")
    row.expect(result.last, n, "requests seen by the responder")
    row.expect(result.histogram.totalCount, UInt64(n), "latencies recorded")
    return row.measurement(window, units: n, note: note, latency: LatencySummary(result.histogram))
}

func pingPongLatencyRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.pingPongLatency
    var rows = RowSet(config, workload)

    rows.measure(BenchSystem.swiftNative, family: .native) { n, row in
        latencyRow(row, n, "Ping actor awaits pong.ping()") {
            runBlocking { await NativePing().run(n) }
        }
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { n, row in
        let system = troupe.system
        let done = Completion<LatencyResult>()
        let pong = system.spawn(Pong())
        let ping = system.spawn(Ping(pong: pong, remaining: n, done: done))
        defer { ping.stop(); pong.stop() }
        return latencyRow(row, n, "Ping ⇄ Pong, tell both ways; \(troupe.workersNote)") {
            ping.tell(.start)
            return done.wait("PingPongLatency / Troupe")
        }
    }

    return rows.measured
}

func askLatencyRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.askLatency
    var rows = RowSet(config, workload)

    rows.measure(BenchSystem.swiftNative, family: .native) { n, row in
        latencyRow(row, n, "a task awaits actor.ping()") {
            runBlocking {
                let pong = NativePong()
                var histogram = makeLatencyHistogram()
                var last = 0
                for _ in 0..<n {
                    let start = CBenchSupport_now_ns()
                    last = await pong.ping()
                    histogram.record(CBenchSupport_now_ns() &- start)
                }
                return LatencyResult(histogram: histogram, last: last)
            }
        }
    }

    /// An actor asks Pong `n` times, one ask at a time, on `system`.
    func actorAskRow(_ system: ActorSystem, _ name: String, busy: Bool, note: String, _ n: Int) -> Measurement {
        let done = Completion<LatencyResult>()
        let pong = system.spawn(Pong())
        let asker = system.spawn(Asker(pong: pong, busy: busy, remaining: n, done: done))
        defer { asker.stop(); pong.stop() }
        return latencyRow(Row(workload: workload, system: name), n, note) {
            asker.tell(.start)
            return done.wait("AskLatency / \(name)")
        }
    }

    /// `n` asks of `pong`, one after another, from the calling task; with `busy`, a `.busy`
    /// message told to Pong before each.
    @Sendable func askLoop(_ pong: ActorRef<Pong.Message>, _ n: Int, busy: Bool = false) async -> LatencyResult {
        var result = LatencyResult(histogram: makeLatencyHistogram(), last: 0)
        for _ in 0..<n {
            let start = CBenchSupport_now_ns()
            if busy { pong.tell(.busy) }
            do { result.last = try await pong.ask { .ask($0) } } catch { result.failures += 1 }
            result.histogram.record(CBenchSupport_now_ns() &- start)
        }
        return result
    }

    /// A task on `system`'s task executor asks Pong `n` times.
    func executorAskRow(_ system: ActorSystem, _ name: String, busy: Bool, note: String, _ n: Int) -> Measurement {
        let pong = system.spawn(Pong())
        defer { pong.stop() }
        return latencyRow(Row(workload: workload, system: name), n, note) {
            runBlocking(on: system.taskExecutor) { await askLoop(pong, n, busy: busy) }
        }
    }

    /// The rows of one asking form (`run` makes one): an idle Pong, so that its turn runs in
    /// place; a busy one; and a system without direct hand-off.
    func handOffRows(
        _ form: String, idle: String, busy: String, off: String,
        _ run: (ActorSystem, String, _ busy: Bool, _ note: String, Int) -> Measurement
    ) {
        let variants = [
            (name: "Troupe (\(form))", busy: false, handOff: true, note: idle),
            (name: "Troupe (\(form), target busy)", busy: true, handOff: true, note: busy),
            (name: "Troupe (\(form), hand-off off)", busy: false, handOff: false, note: off),
        ]
        for variant in variants {
            rows.measure(variant.name, family: .troupe) { n, _ in
                guard variant.handOff else {
                    return TroupeHost.withoutHandOff { own in
                        run(own, variant.name, false, "\(variant.note); \(own.workerCount) pinned workers", n)
                    }
                }
                return run(troupe.system, variant.name, variant.busy, "\(variant.note); \(troupe.workersNote)", n)
            }
        }
    }

    handOffRows(
        "actor ask", idle: "context.ask(pong) { .answer($0) }, Pong idle: its turn runs in the asker's",
        busy: "pong.tell(.busy), then context.ask(pong): the ask is queued behind .busy",
        off: "context.ask(pong), a system with directHandOff: false"
    ) { system, name, busy, note, n in actorAskRow(system, name, busy: busy, note: note, n) }

    let taskAsk = "Troupe (ask from a task)"
    rows.measure(taskAsk, family: .troupe, divisor: 4) { n, row in
        let pong = troupe.system.spawn(Pong())
        defer { pong.stop() }
        return latencyRow(row, n, "try await pong.ask { .ask($0) } from a task on Swift's global executor") {
            runBlocking { await askLoop(pong, n) }
        }
    }

    handOffRows(
        "ask from a task on its executor",
        idle:
            "try await pong.ask { .ask($0) } from a task preferring system.taskExecutor, Pong idle: its turn runs in the task's",
        busy: "pong.tell(.busy), then try await pong.ask: queued behind .busy, the task suspends",
        off: "try await pong.ask from a task on the executor of a system with directHandOff: false"
    ) { system, name, busy, note, n in executorAskRow(system, name, busy: busy, note: note, n) }

    let blockingAsk = "Troupe (askBlocking)"
    rows.measure(blockingAsk, family: .troupe, divisor: 4) { n, row in
        let pong = troupe.system.spawn(Pong())
        defer { pong.stop() }
        return latencyRow(row, n, "pong.askBlocking { .ask($0) } from a plain thread") {
            var result = LatencyResult(histogram: makeLatencyHistogram(), last: 0)
            for _ in 0..<n {
                let start = CBenchSupport_now_ns()
                do { result.last = try pong.askBlocking { .ask($0) } } catch { result.failures += 1 }
                result.histogram.record(CBenchSupport_now_ns() &- start)
            }
            return result
        }
    }

    return rows.measured
}
