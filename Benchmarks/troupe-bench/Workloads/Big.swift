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

/// The native node's interface, so that both native forms (default executor, Troupe serial
/// executors) run through `runNativeBig`.
private protocol NativeBigPinger: Actor {
    func setNeighbours(_ all: [Self])
    func run(pings: Int) async
    var received: Int { get }
    func clear()
}

/// The native form: every node's loop awaits `pings` pings of random neighbours, in a task
/// group. Returns the measured window and the pings received.
private func runNativeBig<Node: NativeBigPinger>(_ nodes: [Node], pings: Int) async -> (Window, received: Int) {
    for node in nodes { await node.setNeighbours(nodes) }
    let stopwatch = Stopwatch()
    await withTaskGroup(of: Void.self) { group in
        for node in nodes { group.addTask { await node.run(pings: pings) } }
    }
    let window = stopwatch.stop()
    var received = 0
    for node in nodes {
        received += await node.received
        await node.clear()
    }
    return (window, received)
}

private actor NativeBigNode: NativeBigPinger {
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
private actor ExecutorBigNode: NativeBigPinger {
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
    var rows = RowSet(config, workload)

    rows.measure(BenchSystem.swiftNative, family: .native) { pings, row in
        runBlocking {
            let (window, received) = await runNativeBig((0..<actors).map { NativeBigNode(id: $0) }, pings: pings)
            row.expect(received, actors * pings, "pings received")
            return row.measurement(
                window, units: actors * pings, note: "\(actors) actor loops await neighbours[random].ping()")
        }
    }

    let onTroupe = BenchSystem.nativeOnTroupeExecutors
    rows.measure(onTroupe, family: .native) { pings, row in
        let system = troupe.system
        return runBlocking(on: system.taskExecutor) {
            let nodes = (0..<actors).map { ExecutorBigNode(id: $0, executor: system.makeSerialExecutor()) }
            let (window, received) = await runNativeBig(nodes, pings: pings)
            row.expect(received, actors * pings, "pings received")
            return row.measurement(
                window, units: actors * pings,
                note:
                    "the native form, each actor on a TroupeSerialExecutor, tasks on the task executor; \(troupe.workersNote)"
            )
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { pings, row in
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
        let window = stopwatch.stop()
        var received = 0
        for node in nodes {
            node.queue.sync {
                received += node.state.received
                node.state.neighbours = []
            }
        }
        row.expect(received, actors * pings, "pings received")
        return row.measurement(
            window, units: actors * pings, note: "Savina protocol, a serial queue per actor")
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { pings, row in
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
        let window = stopwatch.stop()
        for node in nodes { node.stop() }
        stoppedLatch.wait("Big / Troupe: stopping the actors")
        row.expect(received.total, actors * pings, "pings received")
        return row.measurement(
            window, units: actors * pings, note: "Savina protocol, tell only; \(troupe.workersNote)")
    }

    return rows.measured
}
