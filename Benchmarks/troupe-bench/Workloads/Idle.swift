// IdleCPU: process CPU (getrusage, all threads) while 1,000 actors that each handled one
// message sit idle for 1 s. MemoryPerIdleActor: heap growth (mallinfo2) per live actor for
// 100,000 actors.
//
// Forms: Troupe `system.spawn`; Swift native `actor` with one Int; Dispatch a serial queue plus
// a state object.

import Dispatch
import Troupe

private struct Idle: ActorDefinition {
    enum Message: Sendable { case touch }
    var value = 0
    mutating func receive(_ message: Message, context: ActorContext<Message>) { value += 1 }
}

private actor NativeIdle {
    private var value = 0
    func touch() { value += 1 }
}

func idleRows(_ config: BenchConfig) -> [Measurement] {
    var rows = RowSet(config, .idleCPU)

    rows.append(
        measureIdleCPU(
            config, system: BenchSystem.swiftNative, note: "each actor handled 1 call before the window",
            makeActors: { count in
                runBlocking {
                    let actors = (0..<count).map { _ in NativeIdle() }
                    for actor in actors { await actor.touch() }
                    return actors
                }
            }))

    rows.append(
        measureIdleCPU(
            config, system: BenchSystem.dispatch, note: "serial queue + state; each ran 1 block before the window",
            makeActors: { count in
                let actors = (0..<count).map { _ in QueueActor("bench.idle", 0) }
                let group = DispatchGroup()
                for actor in actors { actor.queue.async(group: group) { actor.state += 1 } }
                group.wait()
                return actors
            }))

    var idle: [ActorRef<Idle.Message>] = []
    rows.append(
        measureIdleCPU(
            config, system: BenchSystem.troupe, note: troupe.workersNote,
            makeActors: { count in
                idle = (0..<count).map { _ in troupe.system.spawn(Idle()) }
                for actor in idle { actor.tell(.touch) }
                return idle
            }))
    for actor in idle { actor.stop() }
    troupe.settle("IdleCPU / Troupe")
    return rows.measured
}

func memoryRows(_ config: BenchConfig) -> [Measurement] {
    var rows = RowSet(config, .memoryPerIdleActor)
    rows.append(
        measureMemoryPerActor(
            config, system: BenchSystem.swiftNative, note: "actor with one Int",
            makeActor: { _ in
                NativeIdle()
            }))

    rows.append(
        measureMemoryPerActor(
            config, system: BenchSystem.dispatch, note: "serial queue + state object",
            makeActor: { _ in
                QueueActor("bench.idle", 0)
            }))

    var spawned: [ActorRef<Idle.Message>] = []
    spawned.reserveCapacity(config.memoryActors)  // before the window: appending allocates nothing
    rows.append(
        measureMemoryPerActor(
            config, system: BenchSystem.troupe,
            makeActor: { _ in
                let actor = troupe.system.spawn(Idle())
                spawned.append(actor)
                return actor
            }))
    for actor in spawned { actor.stop() }
    troupe.settle("MemoryPerIdleActor / Troupe")
    return rows.measured
}
