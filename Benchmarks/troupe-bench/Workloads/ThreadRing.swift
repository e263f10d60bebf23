// ThreadRing (Savina `threadring`): a token with a hop count travels around a ring of 100
// actors; each holder forwards it, decremented, to its neighbour; the holder that receives 0 is
// the final holder, which must be actor (hops mod ring size). One unit is one hop.
//
// Forms:
// - Troupe: each actor tells its neighbour `.token(t - 1)`.
// - Swift native (fastest idiomatic form): each actor awaits `next.pass(t - 1)`, so one task
//   walks the ring through awaited calls; the chain of suspended calls unwinds every 10,000 hops
//   (the driver resumes from the current holder) to keep its async frames bounded.
// - Swift native (AsyncStream), the one-way form: one task per actor draining its own
//   AsyncStream and yielding into its neighbour's (1/20 of the native size).
// - Dispatch: each hop is `next.queue.async`.

import Dispatch
import Troupe

private struct RingNode: ActorDefinition {
    enum Message: Sendable {
        case link(ActorRef<Message>)
        case token(Int)
    }
    let id: Int
    let done: Completion<Int>
    var next: ActorRef<Message>?

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .link(let next): self.next = next
        case .token(let token):
            if token == 0 { done.complete(id) } else { next.unsafelyUnwrapped.tell(.token(token - 1)) }
        }
    }

    /// Breaks the ring's reference cycle so stopped cells are freed.
    mutating func stopped(context: ActorContext<Message>) { next = nil }
}

private actor NativeRingNode {
    let id: Int
    private var next: NativeRingNode?

    init(id: Int) { self.id = id }

    func link(_ next: NativeRingNode) { self.next = next }

    /// Receives the token and forwards it for at most `budget` more hops.
    func pass(_ token: Int, budget: Int) async -> (holder: Int, token: Int) {
        if token == 0 || budget == 0 { return (id, token) }
        return await next.unsafelyUnwrapped.pass(token - 1, budget: budget - 1)
    }
}

/// Savina's ring, chained awaits: hops per segment before the chain unwinds.
private let nativeSegment = 10_000

private struct DispatchRingState {
    let id: Int
    var next: QueueActor<DispatchRingState>?
}

func threadRingRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.threadRing
    let actors = config.ringActors
    var rows = RowSet(config, workload)

    rows.measure(BenchSystem.swiftNative, family: .native) { hops, row in
        runBlocking {
            let ring = (0..<actors).map { NativeRingNode(id: $0) }
            for (index, node) in ring.enumerated() { await node.link(ring[(index + 1) % actors]) }
            let stopwatch = Stopwatch()
            var holder = 0
            var token = hops
            repeat {
                (holder, token) = await ring[holder].pass(token, budget: nativeSegment)
            } while token > 0
            let window = stopwatch.stop()
            row.expect(holder, hops % actors, "final holder")
            return row.measurement(
                window, units: hops, note: "actor awaits next.pass(t - 1); unwinds every \(grouped(nativeSegment)) hops"
            )
        }
    }

    let stream = oneWayNativeSystem
    rows.measure(stream, family: .native, divisor: 20) { hops, row in
        runBlocking {
            let channels = (0..<actors).map { _ in AsyncStream.makeStream(of: Int.self, bufferingPolicy: .unbounded)
            }
            let stopwatch = Stopwatch()
            let holder = await withTaskGroup(of: Int?.self) { group in
                for index in 0..<actors {
                    let inbox = channels[index].stream
                    let next = channels[(index + 1) % actors].continuation
                    group.addTask {
                        for await token in inbox {
                            if token == 0 {
                                for channel in channels { channel.continuation.finish() }
                                return index
                            }
                            next.yield(token - 1)
                        }
                        return nil
                    }
                }
                channels[0].continuation.yield(hops)
                var holder = -1
                for await result in group { if let result { holder = result } }
                return holder
            }
            let window = stopwatch.stop()
            row.expect(holder, hops % actors, "final holder")
            return row.measurement(
                window, units: hops, note: "one-way: a task per actor, AsyncStream inboxes")
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { hops, row in
        let ring = (0..<actors).map { QueueActor("bench.ring\($0)", DispatchRingState(id: $0)) }
        for (index, node) in ring.enumerated() { node.state.next = ring[(index + 1) % actors] }
        let done = Completion<Int>()
        @Sendable func receive(_ node: QueueActor<DispatchRingState>, _ token: Int) {
            if token == 0 {
                done.complete(node.state.id)
            } else {
                node.state.next.unsafelyUnwrapped.tell { receive($0, token - 1) }
            }
        }
        let stopwatch = Stopwatch()
        ring[0].tell { receive($0, hops) }
        let holder = done.wait("ThreadRing / Dispatch")
        let window = stopwatch.stop()
        row.expect(holder, hops % actors, "final holder")
        for node in ring { node.queue.sync { node.state.next = nil } }  // break the reference cycle
        return row.measurement(
            window, units: hops, note: "next.queue.async per hop")
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { hops, row in
        let system = troupe.system
        let done = Completion<Int>()
        let ring = (0..<actors).map { system.spawn(RingNode(id: $0, done: done)) }
        for (index, node) in ring.enumerated() { node.tell(.link(ring[(index + 1) % actors])) }
        let stopwatch = Stopwatch()
        ring[0].tell(.token(hops))
        let holder = done.wait("ThreadRing / Troupe")
        let window = stopwatch.stop()
        row.expect(holder, hops % actors, "final holder")
        for node in ring { node.stop() }
        return row.measurement(
            window, units: hops, note: "each actor tells next .token(t - 1); \(troupe.workersNote)")
    }

    return rows.measured
}
