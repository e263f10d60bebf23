// Spawn: create an actor and have it handle its first message; the clock stops when all N
// actors have handled theirs. The actors stay alive (in a pre-sized array) until the window
// closes, so their teardown is not measured. One unit is one actor. Target: ≤ 80 ns.
//
// Forms:
// - Troupe: a plain thread calls `system.spawn(…)` and tells the new actor one message; its
//   handler counts down a latch.
// - Swift native (fastest idiomatic form): one task creates an actor and awaits one call on it.
// - Dispatch: a new serial queue plus one `async` block.

import Dispatch
import Troupe

private struct Newborn: ActorDefinition {
    enum Message: Sendable { case hello }
    let handled: Latch

    mutating func receive(_ message: Message, context: ActorContext<Message>) { handled.countDown() }
}

private actor NativeNewborn {
    private var greeted = false
    func hello() { greeted = true }
}

func spawnRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.spawn
    var rows = RowSet(config, workload)

    rows.measure(BenchSystem.swiftNative, family: .native) { n, row in
        runBlocking {
            var alive: [NativeNewborn] = []
            alive.reserveCapacity(n)
            let stopwatch = Stopwatch()
            for _ in 0..<n {
                let actor = NativeNewborn()
                await actor.hello()
                alive.append(actor)
            }
            let window = stopwatch.stop()
            row.expect(alive.count, n, "actors")
            return row.measurement(
                window, units: n, note: "one task: create actor + await hello()")
        }
    }

    rows.measure(BenchSystem.dispatch, family: .dispatch) { n, row in
        let handled = Latch(count: n)
        var alive: [QueueActor<Int>] = []
        alive.reserveCapacity(n)
        let stopwatch = Stopwatch()
        for _ in 0..<n {
            let actor = QueueActor("bench.spawn", 0)
            actor.tell { _ in handled.countDown() }
            alive.append(actor)
        }
        handled.wait("Spawn / Dispatch")
        let window = stopwatch.stop()
        row.expect(handled.count, 0, "actors still waiting for their message")
        return row.measurement(
            window, units: n, note: "new serial queue + one async")
    }

    rows.measure(BenchSystem.troupe, family: .troupe) { n, row in
        let system = troupe.system
        let handled = Latch(count: n)
        var alive: [ActorRef<Newborn.Message>] = []
        alive.reserveCapacity(n)
        let stopwatch = Stopwatch()
        for _ in 0..<n {
            let actor = system.spawn(Newborn(handled: handled))
            actor.tell(.hello)
            alive.append(actor)
        }
        handled.wait("Spawn / Troupe")
        let window = stopwatch.stop()
        row.expect(handled.count, 0, "actors still waiting for their message")
        for actor in alive { actor.stop() }
        return row.measurement(
            window, units: n, note: "a plain thread: system.spawn + tell; \(troupe.workersNote)")
    }

    return rows.measured
}
