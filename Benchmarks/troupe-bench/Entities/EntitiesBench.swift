// `troupe-bench entities`: TroupeVirtualActors on one node (issue 32): the first message to a
// new entity, a send through a held EntityRef beside the same send through an ActorRef, a
// lookup of an active identity, and the memory of an idle activation.

import ArgumentParser
import CBenchSupport
import Foundation
import Histogram
import Troupe
import TroupeVirtualActors

struct EntitiesBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "entities",
        abstract: "TroupeVirtualActors on one node: first message to a new entity, sends through EntityRef, memory.",
        discussion: """
            Each row says what it measures. "first message" is an ask of an identity never used \
            before: the directory's lookup, the activation's spawn and the ask's round trip; its \
            baseline is the same ask of an actor spawned by hand (spawn + ask). The send rows time \
            10^6 tells from one thread to an active entity (until the entity has handled them all), \
            through a held EntityRef and through the activation's own ActorRef. The memory row is \
            heap growth per idle activation.
            """)

    @ParentCommand var parent: TroupeBench
    var quick: Bool { parent.quick }

    @Option(help: "Troupe workers (default: one per CPU).")
    var workers: Int?

    @Option(name: .customLong("best-of"), help: "Best of this many runs per row (default 3; 1 with --quick).")
    var runs: Int?

    @Option(help: "Idle activations for the memory row (default 1,000,000; 100,000 with --quick).")
    var activations: Int?

    func run() throws {
        let system = ActorSystem(
            configuration: .init(name: "entities", workerCount: workers ?? ProcessInfo.processInfo.activeProcessorCount)
        )
        let command = self
        // On the system's task executor, as the README recommends: an ask of an idle actor runs
        // its turn in place there, for the entity and the baseline alike.
        try blocking(on: system) { try await command.measure(system) }
        _ = try? blocking(on: nil) { await system.shutdown() }
    }

    func measure(_ system: ActorSystem) async throws {
        let runs = self.runs ?? (quick ? 1 : 3)
        let newEntities = quick ? 20_000 : 100_000
        let tells = quick ? 200_000 : 1_000_000
        let idle = activations ?? (quick ? 100_000 : 1_000_000)
        print(
            "TroupeVirtualActors on one node (\(system.configuration.workerCount ?? 0) workers; best of \(runs); asks from a task on the system's task executor)"
        )
        print("row | measure | value")
        print("---|---|---")

        var firstBest: LatencySummary?
        var spawnBest: LatencySummary?
        let clock = ContinuousClock()
        for run in 0..<runs {
            let region = try EntityRegion(
                system: system, kind: EntityKind("first-\(run)", idleTimeout: nil) { _ in Echo() })
            var entity = makeLatencyHistogram()
            for index in 0..<newEntities {
                let started = clock.now
                let answer = try await region.entity("k\(index)").ask { .ping($0) }
                entity.record(UInt64(nanoseconds(clock.now - started)))
                verify(answer == 1, "entities: a ping answered \(answer)")
            }
            verify(
                region.statistics.activations == newEntities,
                "entities: \(region.statistics.activations) activations, expected \(newEntities)")
            region.passivateAll()
            var plain = makeLatencyHistogram()
            for _ in 0..<newEntities {
                let started = clock.now
                let ref = system.spawn(Echo())
                let answer = try await ref.ask { .ping($0) }
                plain.record(UInt64(nanoseconds(clock.now - started)))
                verify(answer == 1, "entities: a ping answered \(answer)")
                ref.stop()
            }
            let entitySummary = LatencySummary(entity)
            let plainSummary = LatencySummary(plain)
            if firstBest == nil || entitySummary.p50 < firstBest!.p50 { firstBest = entitySummary }
            if spawnBest == nil || plainSummary.p50 < spawnBest!.p50 { spawnBest = plainSummary }
        }
        print(
            "first message to a new entity (lookup + activation + ask) | p50 / p99 | \(micro(firstBest!.p50)) / \(micro(firstBest!.p99))"
        )
        print(
            "baseline: spawn by hand + ask (no directory) | p50 / p99 | \(micro(spawnBest!.p50)) / \(micro(spawnBest!.p99))"
        )

        let region = try EntityRegion(system: system, kind: EntityKind("counter", idleTimeout: nil) { _ in Echo() })
        let held = region.entity("hot")
        _ = try await held.ask { .ping($0) }
        let actorRef = system.spawn(Echo())
        var viaEntity = Double.infinity
        var viaActor = Double.infinity
        var lookup = Double.infinity
        for _ in 0..<runs {
            viaEntity = min(
                viaEntity,
                try await tellRate(tells, send: { held.tell(.count) }, total: { try await held.ask { .total($0) } }))
            viaActor = min(
                viaActor,
                try await tellRate(
                    tells, send: { actorRef.tell(.count) }, total: { try await actorRef.ask { .total($0) } }))
            let started = clock.now
            var hits = 0
            for _ in 0..<tells { hits &+= region.entity("hot") == held ? 1 : 0 }
            verify(hits == tells, "entities: lookups found another entity")
            lookup = min(lookup, nanoseconds(clock.now - started) / Double(tells))
        }
        print("tell through a held EntityRef (gate + mailbox), until handled | ns per message | \(fixed(viaEntity, 1))")
        print(
            "baseline: tell through the activation's ActorRef, until handled | ns per message | \(fixed(viaActor, 1))")
        print("entity(key) of an active identity (lock + dictionary) | ns per lookup | \(fixed(lookup, 1))")

        let memory = try EntityRegion(system: system, kind: EntityKind("idle", idleTimeout: nil) { _ in Echo() })
        var refs: [EntityRef<Echo.Message>] = []
        refs.reserveCapacity(idle)  // before the window: appending allocates nothing
        let heapBefore = CBenchSupport_heap_in_use()
        for index in 0..<idle { refs.append(memory.entity("i\(index)")) }
        for ref in refs { ref.tell(.count) }
        while memory.statistics.activations < idle { try await Task.sleep(for: .milliseconds(1)) }
        for ref in refs.suffix(1_000) { _ = try await ref.ask { .total($0) } }
        let heapAfter = CBenchSupport_heap_in_use()
        verify(
            memory.statistics.active == idle, "entities: \(memory.statistics.active) idle activations, expected \(idle)"
        )
        let perActivation = Double(heapAfter - heapBefore) / Double(idle)
        print(
            "memory per idle activation at \(idle) (cell, slot, directory entry) | bytes | \(fixed(perActivation, 0))")
        memory.passivateAll()
    }
}

/// An entity that answers 1 to a ping and counts what it is told.
struct Echo: ActorDefinition {
    enum Message: Sendable {
        case ping(Reply<Int>)
        case count
        case total(Reply<Int>)
    }

    var counted = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .ping(let reply): reply.succeed(1)
        case .count: counted += 1
        case .total(let reply): reply.succeed(counted)
        }
    }
}

/// Runs `body` in a task (on `system`'s task executor when given) and waits for it on this
/// plain thread.
func blocking<Value: Sendable>(
    on system: ActorSystem?, _ body: @escaping @Sendable () async throws -> Value
) throws -> Value {
    let semaphore = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<Value, any Error>?  // written before the signal, read after the wait
    let work: @Sendable () async -> Void = {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        semaphore.signal()
    }
    if let system { Task(executorPreference: system.taskExecutor) { await work() } } else { Task { await work() } }
    semaphore.wait()
    return try result!.get()
}

/// Sends `count` tells and waits until the receiver has counted them all; ns per message.
private func tellRate(
    _ count: Int, send: () -> Void, total: () async throws -> Int
) async throws -> Double {
    let before = try await total()
    let clock = ContinuousClock()
    let started = clock.now
    for _ in 0..<count { send() }
    while try await total() < before + count {}
    return nanoseconds(clock.now - started) / Double(count)
}

private func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

private func micro(_ nanoseconds: UInt64) -> String { fixed(Double(nanoseconds) / 1_000, 2) + " µs" }
