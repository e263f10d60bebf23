// PingPong (Savina `pingpong`): two actors exchange N request/response pairs; one unit is a
// round trip (two messages).
//
// Forms:
// - Troupe: Ping tells Pong `.ping(replyTo:)`, Pong tells back `.pong(count)`; neither blocks.
// - Swift native (fastest idiomatic form): the Ping actor awaits `pong.ping()` N times: an
//   awaited actor-to-actor call, which Swift runs as an executor switch on one thread.
// - Dispatch: ping queue `async`s to the pong queue, which `async`s back.

import Dispatch
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

private actor NativePong {
    private var count = 0

    func ping() -> Int {
        count += 1
        return count
    }
}

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
    var rows: [Measurement] = []

    if let m = benchmark(
        config, workload, system: BenchSystem.swiftNative, family: .native,
        { n in
            runBlocking {
                let ping = NativePing()
                let stopwatch = Stopwatch()
                let last = await ping.run(roundTrips: n)
                let (seconds, allocations) = stopwatch.stop()
                verifyEqual(last, n, workload, BenchSystem.swiftNative, "round trips seen by Pong")
                return Measurement(
                    workload: workload, system: BenchSystem.swiftNative, messages: n, seconds: seconds,
                    allocations: allocations, note: "Ping actor awaits pong.ping()")
            }
        })
    {
        rows.append(m)
    }

    if let m = benchmark(
        config, workload, system: BenchSystem.dispatch, family: .dispatch,
        { n in
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
            let (seconds, allocations) = stopwatch.stop()
            verifyEqual(last, n, workload, BenchSystem.dispatch, "round trips seen by Pong")
            return Measurement(
                workload: workload, system: BenchSystem.dispatch, messages: n, seconds: seconds,
                allocations: allocations, note: "ping.async ⇄ pong.async")
        })
    {
        rows.append(m)
    }

    if let m = benchmark(
        config, workload, system: BenchSystem.troupe, family: .troupe,
        { n in
            let system = troupe.system
            let done = Completion<Int>()
            let pong = system.spawn(Pong())
            let ping = system.spawn(Ping(pong: pong, roundTrips: n, done: done))
            let stopwatch = Stopwatch()
            ping.tell(.start)
            let last = done.wait("PingPong / Troupe")
            let (seconds, allocations) = stopwatch.stop()
            verifyEqual(last, n, workload, BenchSystem.troupe, "round trips seen by Pong")
            ping.stop()
            pong.stop()
            return Measurement(
                workload: workload, system: BenchSystem.troupe, messages: n, seconds: seconds,
                allocations: allocations, note: "Ping ⇄ Pong, tell both ways; \(troupe.workersNote)")
        })
    {
        rows.append(m)
    }

    return rows
}
