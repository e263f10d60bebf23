// Pool (issue 4): dispatch throughput of `ActorPool` per routing strategy, and PoolSkew:
// least-loaded's balance when one member is slower than the others. One unit is one message
// handled by a member.
//
// Forms (Troupe only; a pool has no Swift native or Dispatch counterpart here):
// - Pool / Troupe (<routing>): the calling thread tells N values to a pool of `poolMembers`
//   members (firstFreeOrGrow: starts at `poolMembers`, may grow to twice as many; broadcast:
//   every value goes to every member, so N × members messages). Then a flush goes to every
//   member (after its values, mailbox order) and each reports its count and sum.
// - PoolSkew / Troupe (<routing>): as above with work per message: every member spins
//   `poolSkewSpin` rounds of `mix` per message, member 0 ten times as many. The note gives the
//   messages each member handled; least-loaded should give member 0 fewer.

import Synchronization
import Troupe

let poolSystems = poolRoutingNames.map { "Troupe (\($0))" }
let poolSkewSystems = ["Troupe (leastLoaded)", "Troupe (roundRobin)"]
private let poolRoutingNames = [
    "roundRobin", "random", "leastLoaded", "firstFreeOrGrow", "consistentHash", "broadcast",
]

/// What the members report on a flush: per-member message counts and the sum of the values.
private final class PoolTally: Sendable {
    let counts: Mutex<[Int: Int]> = Mutex([:])
    let sum = SharedSum()
    let latch: Latch
    init(members: Int) { latch = Latch(count: members) }
}

private struct PoolMember: ActorDefinition {
    enum Message: Sendable {
        case work(Int)
        case flush(PoolTally)
    }
    let index: Int
    let spin: Int
    var count = 0
    var sum = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .work(let value):
            var state = value
            for _ in 0..<spin { state = mix(state, value) }
            // `state` is used (never equal to .min in practice), so the spin is not removed.
            sum &+= state == .min ? 1 : value
            count += 1
        case .flush(let tally):
            let (index, count, sum) = (index, count, sum)
            tally.counts.withLock { $0[index] = count }
            tally.sum.add(sum)
            tally.latch.countDown()
        }
    }
}

private func routing(_ name: String, members: Int) -> PoolRouting<PoolMember.Message> {
    switch name {
    case "roundRobin": .roundRobin
    case "random": .random
    case "leastLoaded": .leastLoaded
    case "firstFreeOrGrow": .firstFreeOrGrow(upTo: members * 2)
    case "consistentHash":
        .consistentHash(by: { message -> Int in
            if case .work(let value) = message { return value }
            return 0
        })
    case "broadcast": .broadcast
    default: fatalError("unknown routing \(name)")
    }
}

/// Tells 0 ..< n to a fresh pool, flushes every member, verifies count and sum, stops the pool.
private func runPool(_ row: Row, routingName: String, members: Int, spin: Int, _ n: Int) -> Measurement {
    let pool: ActorPool<PoolMember.Message>
    do {
        pool = try troupe.system.spawnPool(size: members, routing: routing(routingName, members: members)) { index in
            PoolMember(index: index, spin: index == 0 ? spin * 10 : spin)
        }
    } catch {
        verify(false, "\(row.workload.rawValue) / \(row.system): spawnPool failed: \(error)")
        fatalError()
    }
    let stopwatch = Stopwatch()
    for value in 0..<n { pool.tell(.work(value)) }
    let refs = pool.members
    let tally = PoolTally(members: refs.count)
    for ref in refs { ref.tell(.flush(tally)) }
    tally.latch.wait("\(row.workload.rawValue) / \(row.system)")
    let window = stopwatch.stop()
    pool.stop()
    let copies = routingName == "broadcast" ? refs.count : 1
    let counts = tally.counts.withLock { $0 }
    let total = counts.values.reduce(0, +)
    row.expect(total, n * copies, "messages handled")
    row.expect(tally.sum.total, copies * (n * (n - 1) / 2), "sum")
    let perMember = (0..<refs.count).map { String(counts[$0] ?? 0) }.joined(separator: "/")
    var note = "\(refs.count) members; per member: \(perMember)"
    if spin > 0 { note += "; member 0 spins 10×" }
    return row.measurement(window, units: total, note: note)
}

func poolRows(_ config: BenchConfig) -> [Measurement] {
    var rows = RowSet(config, .pool)
    for name in poolRoutingNames {
        rows.measure("Troupe (\(name))", family: .troupe) { n, row in
            runPool(row, routingName: name, members: config.poolMembers, spin: 0, n)
        }
    }
    return rows.measured
}

func poolSkewRows(_ config: BenchConfig) -> [Measurement] {
    var rows = RowSet(config, .poolSkew)
    for system in poolSkewSystems {
        let name = system == "Troupe (leastLoaded)" ? "leastLoaded" : "roundRobin"
        rows.measure(system, family: .troupe) { n, row in
            runPool(row, routingName: name, members: config.poolMembers, spin: config.poolSkewSpin, n)
        }
    }
    return rows.measured
}
