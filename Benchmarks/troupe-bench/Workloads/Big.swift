// Big (Savina `big`): 120 actors each send P pings, one at a time, to random actors (possibly
// themselves); every ping is answered by a pong, and a pong triggers the next ping. Verified:
// every actor received all its pongs and the actors received N·P pings between them. One unit
// is one ping (with its pong: two messages).
//
// Forms:
// - Troupe: `.ping(from:)` and `.pong` tells; neighbours are addressed by index.
// - Swift native (fastest idiomatic form): each actor runs a loop awaiting
//   `neighbours[random].ping()` (the return is the pong); the 120 loops run in a task group.
// - Dispatch: the Troupe protocol with one serial queue per actor.

import Dispatch
import Troupe

private struct BigNode: ActorDefinition {
    enum Message: Sendable {
        case neighbours([ActorRef<Message>])
        case start
        case ping(from: Int)
        case pong
    }
    let id: Int
    let finished: Latch
    let stoppedLatch: Latch
    let pingsReceived: SharedSum
    var pingsLeft: Int
    var random: FastRandom
    var neighbours: [ActorRef<Message>] = []
    var received = 0

    init(id: Int, pings: Int, finished: Latch, stoppedLatch: Latch, pingsReceived: SharedSum) {
        self.id = id
        self.pingsLeft = pings
        self.finished = finished
        self.stoppedLatch = stoppedLatch
        self.pingsReceived = pingsReceived
        random = FastRandom(seed: UInt64(id + 1))
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .neighbours(let all): neighbours = all
        case .start: sendPing()
        case .ping(let from):
            received += 1
            neighbours[from].tell(.pong)
        case .pong:
            pingsLeft -= 1
            if pingsLeft == 0 { finished.countDown() } else { sendPing() }
        }
    }

    private mutating func sendPing() {
        neighbours[random.next(below: neighbours.count)].tell(.ping(from: id))
    }

    mutating func stopped(context: ActorContext<Message>) {
        pingsReceived.add(received)
        neighbours = []  // break the reference cycle
        stoppedLatch.countDown()
    }
}

private actor NativeBigNode {
    private var neighbours: [NativeBigNode] = []
    private var random: FastRandom
    private(set) var received = 0

    init(id: Int) { random = FastRandom(seed: UInt64(id + 1)) }

    func setNeighbours(_ all: [NativeBigNode]) { neighbours = all }

    /// A ping; returning is the pong.
    func ping() { received += 1 }

    func run(pings: Int) async {
        for _ in 0..<pings {
            await neighbours[random.next(below: neighbours.count)].ping()
        }
    }

    func clear() { neighbours = [] }
}

/// The native node on a Troupe serial executor of its own.
private actor ExecutorBigNode {
    nonisolated let executor: TroupeSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var neighbours: [ExecutorBigNode] = []
    private var random: FastRandom
    private(set) var received = 0

    init(id: Int, executor: TroupeSerialExecutor) {
        self.executor = executor
        random = FastRandom(seed: UInt64(id + 1))
    }

    func setNeighbours(_ all: [ExecutorBigNode]) { neighbours = all }
    func ping() { received += 1 }

    func run(pings: Int) async {
        for _ in 0..<pings {
            await neighbours[random.next(below: neighbours.count)].ping()
        }
    }

    func clear() { neighbours = [] }
}

private struct DispatchBigState {
    let id: Int
    var pingsLeft: Int
    var random: FastRandom
    var neighbours: [QueueActor<DispatchBigState>] = []
    var received = 0
}

func bigRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.big
    let actors = config.bigActors
    var rows: [Measurement] = []

    if let m = benchmark(
        config, workload, system: BenchSystem.swiftNative, family: .native,
        { pings in
            runBlocking {
                let nodes = (0..<actors).map { NativeBigNode(id: $0) }
                for node in nodes { await node.setNeighbours(nodes) }
                let stopwatch = Stopwatch()
                await withTaskGroup(of: Void.self) { group in
                    for node in nodes { group.addTask { await node.run(pings: pings) } }
                }
                let (seconds, allocations) = stopwatch.stop()
                var received = 0
                for node in nodes {
                    received += await node.received
                    await node.clear()
                }
                verifyEqual(received, actors * pings, workload, BenchSystem.swiftNative, "pings received")
                return Measurement(
                    workload: workload, system: BenchSystem.swiftNative, messages: actors * pings, seconds: seconds,
                    allocations: allocations, note: "\(actors) actor loops await neighbours[random].ping()")
            }
        })
    {
        rows.append(m)
    }

    let onTroupe = BenchSystem.nativeOnTroupeExecutors
    if let m = benchmark(
        config, workload, system: onTroupe, family: .native,
        { pings in
            let system = troupe.system
            return runBlocking(on: system.taskExecutor) {
                let nodes = (0..<actors).map { ExecutorBigNode(id: $0, executor: system.makeSerialExecutor()) }
                for node in nodes { await node.setNeighbours(nodes) }
                let stopwatch = Stopwatch()
                await withTaskGroup(of: Void.self) { group in
                    for node in nodes { group.addTask { await node.run(pings: pings) } }
                }
                let (seconds, allocations) = stopwatch.stop()
                var received = 0
                for node in nodes {
                    received += await node.received
                    await node.clear()
                }
                verifyEqual(received, actors * pings, workload, onTroupe, "pings received")
                return Measurement(
                    workload: workload, system: onTroupe, messages: actors * pings, seconds: seconds,
                    allocations: allocations,
                    note:
                        "the native form, each actor on a TroupeSerialExecutor, tasks on the task executor; \(troupe.workersNote)"
                )
            }
        })
    {
        rows.append(m)
    }

    if let m = benchmark(
        config, workload, system: BenchSystem.dispatch, family: .dispatch,
        { pings in
            let finished = Latch(count: actors)
            let nodes = (0..<actors).map {
                QueueActor(
                    "bench.big\($0)",
                    DispatchBigState(id: $0, pingsLeft: pings, random: FastRandom(seed: UInt64($0 + 1))))
            }
            for node in nodes { node.state.neighbours = nodes }
            // Each function runs on the queue of its first argument.
            @Sendable func sendPing(_ me: QueueActor<DispatchBigState>) {
                let target = me.state.neighbours[me.state.random.next(below: actors)]
                target.tell { target in
                    target.state.received += 1
                    me.tell { pong($0) }
                }
            }
            @Sendable func pong(_ me: QueueActor<DispatchBigState>) {
                me.state.pingsLeft -= 1
                if me.state.pingsLeft == 0 { finished.countDown() } else { sendPing(me) }
            }
            let stopwatch = Stopwatch()
            for node in nodes { node.tell { sendPing($0) } }
            finished.wait("Big / Dispatch")
            let (seconds, allocations) = stopwatch.stop()
            var received = 0
            for node in nodes {
                node.queue.sync {
                    received += node.state.received
                    node.state.neighbours = []
                }
            }
            verifyEqual(received, actors * pings, workload, BenchSystem.dispatch, "pings received")
            return Measurement(
                workload: workload, system: BenchSystem.dispatch, messages: actors * pings, seconds: seconds,
                allocations: allocations, note: "Savina protocol, a serial queue per actor")
        })
    {
        rows.append(m)
    }

    if let m = benchmark(
        config, workload, system: BenchSystem.troupe, family: .troupe,
        { pings in
            let system = troupe.system
            let finished = Latch(count: actors)
            let stoppedLatch = Latch(count: actors)
            let received = SharedSum()
            let nodes = (0..<actors).map {
                system.spawn(
                    BigNode(
                        id: $0, pings: pings, finished: finished, stoppedLatch: stoppedLatch, pingsReceived: received))
            }
            for node in nodes { node.tell(.neighbours(nodes)) }
            let stopwatch = Stopwatch()
            for node in nodes { node.tell(.start) }
            finished.wait("Big / Troupe")
            let (seconds, allocations) = stopwatch.stop()
            for node in nodes { node.stop() }
            stoppedLatch.wait("Big / Troupe: stopping the actors")
            verifyEqual(received.total, actors * pings, workload, BenchSystem.troupe, "pings received")
            return Measurement(
                workload: workload, system: BenchSystem.troupe, messages: actors * pings, seconds: seconds,
                allocations: allocations, note: "Savina protocol, tell only; \(troupe.workersNote)")
        })
    {
        rows.append(m)
    }

    return rows
}
