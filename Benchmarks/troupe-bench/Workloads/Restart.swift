// Restart: what restarting an actor costs on the core API (`FailureDirective.restart`,
// `ActorRef.requestRestart`), beside what a restart avoids: stopping the actor and spawning a
// fresh one (new cell, new mailbox, registry). One unit is one restart (spawn+stop: one actor
// spawned and stopped). Target: restart ≤ spawn+stop, per unit.
//
// Forms:
// - Troupe (fail → restart): an actor spawned with `spawn(options: SpawnOptions(failureDecider:
//   { _ in .restart })) { Fragile(…) }`; a plain thread tells it N messages that each throw.
//   Per unit: the handler throws, the decider runs, the failing message becomes a dead letter
//   (`.handlerFailed`, its error described as a String), `willRestart`, a new instance from the
//   factory, `didRestart`, the restart hook. The clock stops when the restart hook has seen N
//   restarts. Verified: N restarts seen by `system.hooks.onActorRestarted`, N `.handlerFailed`
//   dead letters, N + 1 instances made by the factory, and a final ask answered by a fresh
//   instance (the last generation, `didRestart` ran, no message handled before the ask).
// - Troupe (requestRestart): 1,000 idle actors (spawned from a factory, each has handled one
//   message); a plain thread calls `ref.requestRestart()` on each, then waits until the hook has
//   seen the round's 1,000 restarts before the next round (a request to an actor whose previous
//   restart is still pending would coalesce with it). Verified: restarts seen by the hook, every
//   request accepted, instances made, every actor's instance restarted.
// - Troupe (spawn+stop): a plain thread spawns an actor (`system.spawn(Def())`) and stops it at
//   once; the clock stops when every actor's `stopped` hook ran. Half the Troupe size.
// - Swift native (new actor per unit): context only (Swift has no restart): one task creates a
//   fresh `actor`, awaits one call on it and drops it, i.e. the state is replaced by a new actor.
//
// The bench system's logger filters warnings (see TroupeHost): the runtime's "…; restarting"
// warning costs its level check here, not a log line.

import Dispatch
import Synchronization
import Troupe

let restartSystems = [
    "Swift native (new actor per unit)", "Troupe (fail → restart)", "Troupe (requestRestart)",
    restartBaselineSystem,
]

/// Counts the bench system's restarts through `system.hooks.onActorRestarted` (one observer,
/// registered on first use, for the whole process) and releases a waiter when a given count
/// is reached. Only the Restart rows restart actors.
final class RestartObserver: Sendable {
    static let shared: RestartObserver = {
        let observer = RestartObserver()
        troupe.system.hooks.onActorRestarted { _, _ in observer.record() }
        return observer
    }()

    private let count = Atomic<Int>(0)
    private let signalAt = Atomic<Int>(Int.max)
    private let reached = DispatchSemaphore(value: 0)

    /// Restarts seen so far.
    var restarts: Int { count.load(ordering: .acquiring) }

    private func record() {
        if count.add(1, ordering: .acquiringAndReleasing).newValue == signalAt.load(ordering: .acquiring) {
            reached.signal()
        }
    }

    /// Call before causing `more` restarts; then `wait`.
    func expect(_ more: Int) {
        signalAt.store(count.load(ordering: .acquiring) + more, ordering: .releasing)
    }

    func wait(_ what: @autoclosure () -> String) {
        waitOrFail(reached, what())
    }
}

/// Numbers the instances a factory makes (1 for the spawn, then one per restart).
private final class Generations: Sendable {
    private let made = Atomic<Int>(0)
    func next() -> Int { made.add(1, ordering: .relaxed).newValue }
    var total: Int { made.load(ordering: .acquiring) }
}

private struct FragileFailure: Error, CustomStringConvertible {
    var description: String { "fragile failure" }
}

/// What a probe ask reports about the instance that answered.
private struct InstanceProbe: Sendable, Equatable {
    var generation: Int
    var handledBefore: Int
    var restarted: Bool
}

private struct Fragile: ActorDefinition {
    enum Message: Sendable {
        case fail
        case touch(Latch)
        case probe(Reply<InstanceProbe>)
    }
    let generation: Int
    var handled = 0
    var restarted = false

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .fail:
            handled += 1
            throw FragileFailure()
        case .touch(let latch):
            handled += 1
            latch.countDown()
        case .probe(let reply):
            reply.succeed(InstanceProbe(generation: generation, handledBefore: handled, restarted: restarted))
        }
    }

    mutating func didRestart(reason: any Error, context: ActorContext<Message>) { restarted = true }
}

private struct ShortLived: ActorDefinition {
    enum Message: Sendable { case unused }
    let stopped: Latch
    mutating func receive(_ message: Message, context: ActorContext<Message>) {}
    mutating func stopped(context: ActorContext<Message>) { stopped.countDown() }
}

private actor NativeReplaceable {
    private var state = 0
    func work(_ value: Int) -> Int {
        state = value
        return state
    }
}

private func probe(_ ref: ActorRef<Fragile.Message>, _ system: String) -> InstanceProbe {
    do {
        return try ref.askBlocking { .probe($0) }
    } catch {
        verify(false, "\(Workload.restart.rawValue) / \(system): probe ask failed: \(error)")
        fatalError("unreachable")
    }
}

/// The unit of the spawn+stop and native rows: an actor made (and stopped or dropped) instead of a restart.
private let actorUnit = (singular: "actor", plural: "actors")

func restartRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.restart
    var rows = RowSet(config, workload)

    let native = restartSystems[0]
    rows.measure(native, family: .native) { n, row in
        runBlocking {
            var sum = 0
            let stopwatch = Stopwatch()
            for index in 0..<n {
                let fresh = NativeReplaceable()
                sum &+= await fresh.work(index)
            }
            let window = stopwatch.stop()
            row.expect(sum, n * (n - 1) / 2, "sum of results")
            var m = row.measurement(
                window, units: n,
                note: "context (no restart in Swift): one task creates an actor, awaits work(i), drops it")
            m.unitOverride = actorUnit
            return m
        }
    }

    let failing = restartSystems[1]
    rows.measure(failing, family: .troupe) { n, row in
        let system = troupe.system
        let observer = RestartObserver.shared
        let generations = Generations()
        let restartsBefore = observer.restarts
        let deadLettersBefore = system.deadLetters.count(.handlerFailed)
        let ref = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart })) {
            Fragile(generation: generations.next())
        }
        let ready = Latch(count: 1)
        ref.tell(.touch(ready))
        ready.wait("\(workload.rawValue) / \(failing): first message")
        observer.expect(n)
        let stopwatch = Stopwatch()
        for _ in 0..<n { ref.tell(.fail) }
        observer.wait("\(workload.rawValue) / \(failing)")
        let window = stopwatch.stop()
        let answer = probe(ref, failing)
        ref.stop()
        row.expect(observer.restarts - restartsBefore, n, "restarts seen by onActorRestarted")
        row.expect(
            system.deadLetters.count(.handlerFailed) - deadLettersBefore, n,
            "handlerFailed dead letters")
        row.expect(generations.total, n + 1, "instances made by the factory")
        row.expect(
            answer, InstanceProbe(generation: n + 1, handledBefore: 0, restarted: true),
            "the final ask's answer (fresh instance)")
        return row.measurement(
            window, units: n,
            note: "a plain thread tells N throwing msgs; each: dead letter + new instance; \(troupe.workersNote)")
    }

    let requested = restartSystems[2]
    rows.measure(requested, family: .troupe) { n, row in
        let system = troupe.system
        let observer = RestartObserver.shared
        let generations = Generations()
        let perRound = min(config.restartRoundActors, n)
        let rounds = n / perRound
        let units = rounds * perRound
        let refs = (0..<perRound).map { _ in
            system.spawn(options: SpawnOptions()) { Fragile(generation: generations.next()) }
        }
        let ready = Latch(count: perRound)
        for ref in refs { ref.tell(.touch(ready)) }
        ready.wait("\(workload.rawValue) / \(requested): first messages")
        let restartsBefore = observer.restarts
        var accepted = 0
        let stopwatch = Stopwatch()
        for round in 0..<rounds {
            observer.expect(perRound)
            for ref in refs where ref.requestRestart() { accepted += 1 }
            observer.wait("\(workload.rawValue) / \(requested), round \(round)")
        }
        let window = stopwatch.stop()
        let answers = refs.map { probe($0, requested) }
        for ref in refs { ref.stop() }
        row.expect(accepted, units, "requests accepted")
        row.expect(
            observer.restarts - restartsBefore, units, "restarts seen by onActorRestarted")
        row.expect(generations.total, perRound + units, "instances made by the factory")
        row.expect(
            answers.filter { $0.restarted && $0.handledBefore == 0 }.count, perRound,
            "actors answering from a fresh instance")
        return row.measurement(
            window, units: units,
            note:
                "a plain thread: ref.requestRestart() on \(grouped(perRound)) idle actors per round, waits for the round"
        )
    }

    let baseline = restartSystems[3]
    rows.measure(baseline, family: .troupe, divisor: 2) { n, row in
        let system = troupe.system
        let stopped = Latch(count: n)
        let stopwatch = Stopwatch()
        for _ in 0..<n {
            let ref = system.spawn(ShortLived(stopped: stopped))
            ref.stop()
        }
        stopped.wait("\(workload.rawValue) / \(baseline)")
        let window = stopwatch.stop()
        row.expect(stopped.count, 0, "actors not stopped")
        var m = row.measurement(
            window, units: n, note: "a plain thread: system.spawn(Def()) + stop(); until every stopped hook ran")
        m.unitOverride = actorUnit
        return m
    }

    return rows.measured
}
