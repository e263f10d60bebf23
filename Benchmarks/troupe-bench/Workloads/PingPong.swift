// PingPong (Savina `pingpong`): two actors exchange N request/response pairs; one unit is a
// round trip (two messages).
//
// Forms:
// - Troupe: Ping tells Pong `.ping(replyTo:)`, Pong tells back `.pong(count)`; neither blocks.
// - Swift native (fastest idiomatic form): the Ping actor awaits `pong.ping()` N times: an
//   awaited actor-to-actor call, which Swift completes on the caller's thread without a hop:
//   no message is passed.
// - Swift native (2 executors): the same two actors, each on an executor of its own thread
//   (`ThreadExecutor`), and Ping stores each answer in its own state, so each call really
//   hands a job to the other thread and back: the native form that passes messages, and the
//   baseline of the Troupe row's ratio.
// - Swift native on Troupe (2 executors): the same two actors, each on a TroupeSerialExecutor
//   of its own: each call is a job through a Troupe mailbox and back (compare with the
//   2-executor row above).
// - Swift native on Troupe (1 executor): both actors on one TroupeSerialExecutor: Swift makes
//   the call without a hop, as on its default executor (compare with Swift native).
// - Troupe (Pong a child of Ping): the same, with Pong spawned by Ping (`context.spawn`), so
//   the ref in every ping is a parent's.
// - Dispatch: ping queue `async`s to the pong queue, which `async`s back.

import Dispatch
import Tracing
import Troupe

private struct Pong: ActorDefinition {
    enum Message: Sendable { case ping(replyTo: ActorRef<Ping.Message>) }
    var count = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        count += 1
        switch message {
        case .ping(let replyTo): replyTo.tell(.pong(count))
        }
    }
}

private struct Ping: ActorDefinition {
    enum Message: Sendable { case start, pong(Int) }
    let pong: ActorRef<Pong.Message>
    let roundTrips: Int
    let done: Completion<Int>
    var completed = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .start:
            pong.tell(.ping(replyTo: context.ref))
        case .pong(let count):
            completed += 1
            if completed == roundTrips {
                done.complete(count)
            } else {
                pong.tell(.ping(replyTo: context.ref))
            }
        }
    }
}

/// Ping for the family row: spawns its Pong as a child on `.start`.
private struct ParentPing: ActorDefinition {
    typealias Message = Ping.Message
    let roundTrips: Int
    let done: Completion<Int>
    var pong: ActorRef<Pong.Message>?
    var completed = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .start:
            let child = context.spawn(Pong())
            pong = child
            child.tell(.ping(replyTo: context.ref))
        case .pong(let count):
            completed += 1
            if completed == roundTrips {
                done.complete(count)
            } else {
                pong?.tell(.ping(replyTo: context.ref))
            }
        }
    }
}

private actor NativePong {
    private var count = 0

    func ping() -> Int {
        count += 1
        return count
    }
}

/// The actors of the executor rows: the same calls, on the executors they are given (threads of
/// their own, or Troupe serial executors).
private actor HoppingPong<Executor: SerialExecutor> {
    nonisolated let executor: Executor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var count = 0

    init(executor: Executor) { self.executor = executor }

    func ping() -> Int {
        count += 1
        return count
    }
}

private actor HoppingPing<Executor: SerialExecutor> {
    nonisolated let executor: Executor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let pong: HoppingPong<Executor>
    /// Written after every call: the loop needs Ping's isolation again after each `await`, so
    /// each round trip hops back. (With only a local variable, the optimizer drops the hop back
    /// and the whole loop runs on Pong's executor: one hop in total.)
    private var seen = 0

    init(executor: Executor, pong: HoppingPong<Executor>) {
        self.executor = executor
        self.pong = pong
    }

    func run(roundTrips: Int) async -> Int {
        for _ in 0..<roundTrips { seen = await pong.ping() }
        return seen
    }
}

/// Two executor threads for the whole process (each run makes new actors on them).
private let pingPongExecutors = (ping: ThreadExecutor(), pong: ThreadExecutor())

private actor NativePing {
    private let pong = NativePong()

    func run(roundTrips: Int) async -> Int {
        var last = 0
        for _ in 0..<roundTrips { last = await pong.ping() }
        return last
    }
}

// The ping side's counter lives on the ping queue, the pong side's on the pong queue.
private struct DispatchPingState { var sent = 0 }
private struct DispatchPongState { var count = 0 }

func pingPongRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.pingPong
    var rows = RowSet(config, workload)

    rows.measure(BenchSystem.swiftNative, family: .native) { n, row in
        runBlocking {
            let ping = NativePing()
            let stopwatch = Stopwatch()
            let last = await ping.run(roundTrips: n)
            let window = stopwatch.stop()
            row.expect(last, n, "round trips seen by Pong")
            return row.measurement(
                window, units: n, note: "Ping actor awaits pong.ping(): same thread, no hop, no message")
        }
    }

    rows.measure(BenchSystem.swiftNativeTwoExecutors, family: .dispatch) { n, row in
        runBlocking {
            let pong = HoppingPong(executor: pingPongExecutors.pong)
            let ping = HoppingPing(executor: pingPongExecutors.ping, pong: pong)
            let stopwatch = Stopwatch()
            let last = await ping.run(roundTrips: n)
            let window = stopwatch.stop()
            row.expect(last, n, "round trips seen by Pong")
            return row.measurement(
                window, units: n, note: "Ping actor awaits pong.ping(); each on its own thread's executor")
        }
    }

    for shared in [false, true] {
        let name = shared ? BenchSystem.nativeOnTroupeOneExecutor : BenchSystem.nativeOnTroupeTwoExecutors
        rows.measure(name, family: shared ? .native : .troupe) { n, row in
            let system = troupe.system
            let pingExecutor = system.makeSerialExecutor()
            let pong = HoppingPong(executor: shared ? pingExecutor : system.makeSerialExecutor())
            let ping = HoppingPing(executor: pingExecutor, pong: pong)
            return runBlocking {
                let stopwatch = Stopwatch()
                let last = await ping.run(roundTrips: n)
                let window = stopwatch.stop()
                row.expect(last, n, "round trips seen by Pong")
                return row.measurement(
                    window, units: n,
                    note: shared
                        ? "Ping and Pong share one TroupeSerialExecutor: Swift calls without a hop, as on its default executor"
                        : "Ping and Pong on TroupeSerialExecutors of their own: each call a job through a mailbox and back; \(troupe.workersNote)"
                )
            }
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { n, row in
        let ping = QueueActor("bench.ping", DispatchPingState())
        let pong = QueueActor("bench.pong", DispatchPongState())
        let done = Completion<Int>()
        @Sendable func sendPing(_ ping: QueueActor<DispatchPingState>) {
            ping.state.sent += 1
            pong.tell { pong in
                pong.state.count += 1
                let count = pong.state.count
                ping.tell { ping in
                    if ping.state.sent == n { done.complete(count) } else { sendPing(ping) }
                }
            }
        }
        let stopwatch = Stopwatch()
        ping.tell(sendPing)
        let last = done.wait("PingPong / Dispatch")
        let window = stopwatch.stop()
        row.expect(last, n, "round trips seen by Pong")
        return row.measurement(
            window, units: n, note: "ping.async ⇄ pong.async")
    }

    for variant in TroupeHost.pingPongVariants {
        let name = variant.system
        rows.measure(name, family: .troupe) { n, row in
            troupe.withRowSystem(variant) { system, systemNote in
                let done = Completion<Int>()
                let pong = system.spawn(Pong())
                let ping = system.spawn(Ping(pong: pong, roundTrips: n, done: done))
                let stopwatch = Stopwatch()
                if variant.carriesContext {
                    var request = ServiceContext.topLevel
                    request[BenchRequestKey.self] = n
                    ServiceContext.$current.withValue(request) { ping.tell(.start) }
                } else {
                    ping.tell(.start)
                }
                let last = done.wait("PingPong / \(name)")
                let window = stopwatch.stop()
                row.expect(last, n, "round trips seen by Pong")
                ping.stop()
                pong.stop()
                return row.measurement(
                    window, units: n, note: "Ping ⇄ Pong, tell both ways; \(systemNote)")
            }
        }
    }

    rows.measure(BenchSystem.troupeChildPartner, family: .troupe) { n, row in
        let done = Completion<Int>()
        let ping = troupe.system.spawn(ParentPing(roundTrips: n, done: done))
        let stopwatch = Stopwatch()
        ping.tell(.start)
        let last = done.wait("PingPong / \(BenchSystem.troupeChildPartner)")
        let window = stopwatch.stop()
        row.expect(last, n, "round trips seen by Pong")
        ping.stop()  // stops its child too
        return row.measurement(
            window, units: n, note: "Ping ⇄ Pong, tell both ways; Pong spawned by Ping; \(troupe.workersNote)")
    }

    return rows.measured
}

/// The value the tracing row's ServiceContext carries.
private enum BenchRequestKey: ServiceContextKey {
    typealias Value = Int
}
