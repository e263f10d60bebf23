// Spawn: create an actor and have it handle its first message; the clock stops when all N
// actors have handled theirs. The actors stay alive (in a pre-sized array) until the window
// closes, so their teardown is not measured. One unit is one actor. Target: ≤ 80 ns.
//
// Forms:
// - Troupe: a plain thread calls `system.spawn(…)` and tells the new actor one message; its
//   handler counts down a latch.
// - Troupe (spawn + ask from a task on its executor): the native form's shape, one task that
//   creates an actor and awaits one answer from it, on the system's task executor: the spawn
//   puts the first turn into the worker's slot, and the ask takes it out and runs `started` and
//   itself in place, so the task never suspends. The same with `directHandOff: false` shows
//   what a spawn and an ask cost when both go through the workers.
// - Swift native (fastest idiomatic form): one task creates an actor and awaits one call on it.
// - Dispatch: a new serial queue plus one `async` block.

import Dispatch
import Troupe

private struct Newborn: ActorDefinition {
    enum Message: Sendable { case hello }
    let handled: Latch

    mutating func receive(_ message: Message, context: ActorContext<Message>) { handled.countDown() }
}

/// Answers one ask: the first message of the task rows.
private struct AskedNewborn: ActorDefinition {
    enum Message: Sendable { case hello(Reply<Int>) }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .hello(let reply): reply.succeed(1)
        }
    }
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

    /// One task on `system`'s task executor spawns `n` actors, each asked once before the next.
    func taskRow(_ system: ActorSystem, _ row: Row, note: String, _ n: Int) -> Measurement {
        let (window, answered, alive) = runBlocking(on: system.taskExecutor) {
            var alive: [ActorRef<AskedNewborn.Message>] = []
            alive.reserveCapacity(n)
            var answered = 0
            let stopwatch = Stopwatch()
            for _ in 0..<n {
                let actor = system.spawn(AskedNewborn())
                answered += (try? await actor.ask { .hello($0) }) ?? 0
                alive.append(actor)
            }
            return (stopwatch.stop(), answered, alive)
        }
        row.expect(answered, n, "answers")
        for actor in alive { actor.stop() }
        return row.measurement(window, units: n, note: note)
    }

    rows.measure(BenchSystem.troupeSpawnAskFromTask, family: .troupe) { n, row in
        taskRow(
            troupe.system, row,
            note: "one task on system.taskExecutor: system.spawn + try await ask; \(troupe.workersNote)", n)
    }

    rows.measure(BenchSystem.troupeSpawnAskFromTaskHandOffOff, family: .troupe) { n, row in
        TroupeHost.withoutHandOff { own in
            taskRow(
                own, row, note: "the same on a system with directHandOff: false; \(own.workerCount) pinned workers", n)
        }
    }

    return rows.measured
}
