// The rows of `troupe-bench persistence`.

import Dispatch
import Foundation
import Histogram
import NIOCore
import NIOPosix
import Logging
import SQLiteNIO
import Synchronization
import Troupe
import TroupePersistence
import TroupePersistenceSQLite

/// The benchmark's durable actor: appends 100-byte events and counts them.
struct Ledger: EventSourcedActor {
    enum Command: Sendable {
        case append([UInt8], Reply<Int64>)
        case count(Reply<Int64>)
    }
    struct Event: Sendable { var bytes: [UInt8] }

    let persistenceID: PersistenceID
    var emptyState: Int64 { 0 }
    /// The bytes as they are: what the rows measure is the journal, not an encoder.
    static let eventCodec = PersistenceCodec<Event>(
        typeName: "blob", encode: { $0.bytes }, decode: { Event(bytes: $0) })

    func handle(_ command: Command, state: Int64, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .append(let bytes, let reply): .persist(Event(bytes: bytes)).thenReply(reply) { $0 }
        case .count(let reply): .reply(reply, state)
        }
    }

    func apply(_ event: Event, to state: inout Int64) { state += 1 }
}

/// The ledger with a snapshot after every 5 events (the state is the count, as text).
struct SnapshottedLedger: EventSourcedActor {
    typealias Command = Ledger.Command
    typealias Event = Ledger.Event
    let persistenceID: PersistenceID
    var emptyState: Int64 { 0 }
    static var eventCodec: PersistenceCodec<Event> { Ledger.eventCodec }
    static var snapshots: SnapshotPolicy<Int64> { .every(5, keep: 1, codec: countCodec) }
    static let countCodec = PersistenceCodec<Int64>(
        typeName: "count", encode: { Array(String($0).utf8) },
        decode: { Int64(String(decoding: $0, as: UTF8.self)) ?? -1 })

    func handle(_ command: Command, state: Int64, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .append(let bytes, let reply): .persist(Event(bytes: bytes)).thenReply(reply) { $0 }
        case .count(let reply): .reply(reply, state)
        }
    }

    func apply(_ event: Event, to state: inout Int64) { state += 1 }
}

let eventBytes = [UInt8](repeating: 0x61, count: 100)

/// A system, a store (SQLite, or PostgreSQL in a database of its own) and its journal for one run.
struct Rig {
    let system: ActorSystem
    let store: any PersistenceStore
    let journal: Journal
    let closeStore: @Sendable () async throws -> Void

    static func open(_ options: PersistenceBenchOptions, _ name: String) async throws -> Rig {
        var configuration = ActorSystem.Configuration(name: "bench")
        configuration.workerCount = options.workers
        let system = ActorSystem(configuration: configuration)
        let executor: (any TaskExecutor)? = options.journalOnWorkers ? system.taskExecutor : nil
        #if PostgreSQL
            if let server = options.postgres { return try await server.openRig(system: system, executor: executor) }
        #endif
        if options.inMemory {
            let store = InMemoryStore()
            return Rig(system: system, store: store, journal: Journal(store: store, executor: executor)) {}
        }
        let synchronous = SQLiteStore.Synchronous(rawValue: options.synchronous) ?? .normal
        let store = try await SQLiteStore.open(path: options.path(name), synchronous: synchronous)
        return Rig(system: system, store: store, journal: Journal(store: store, executor: executor)) {
            try await store.close()
        }
    }

    func close() async throws {
        await system.shutdown()
        await journal.shutdown()
        try await closeStore()
    }
}

/// The PostgreSQL server the environment names (as scripts/postgres.sh start prints it).
struct PostgresBenchServer: Sendable {
    let host: String
    let port: Int
    let user: String
    let password: String?
    let database: String

    static func fromEnvironment() -> PostgresBenchServer? {
        let environment = ProcessInfo.processInfo.environment
        guard let host = environment["TROUPE_POSTGRES_HOST"] else { return nil }
        return PostgresBenchServer(
            host: host, port: environment["TROUPE_POSTGRES_PORT"].flatMap { Int($0) } ?? 5432,
            user: environment["TROUPE_POSTGRES_USER"] ?? "postgres", password: environment["TROUPE_POSTGRES_PASSWORD"],
            database: environment["TROUPE_POSTGRES_DATABASE"] ?? "postgres")
    }
}

/// Counts replies and wakes the waiter when `expected` have arrived.
final class Countdown: Sendable {
    private let remaining: Atomic<Int>
    private let done = DispatchSemaphore(value: 0)
    let failures = Atomic<Int>(0)

    init(_ expected: Int) { remaining = Atomic(expected) }

    func arrive(failed: Bool = false) {
        if failed { failures.add(1, ordering: .relaxed) }
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { done.signal() }
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                self.done.wait()
                continuation.resume()
            }
        }
    }
}

/// Latencies recorded from many threads.
final class Latencies: Sendable {
    private let histogram = Mutex(
        Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three))

    func record(since start: UInt64) {
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        histogram.withLock { _ = $0.record(elapsed) }
    }

    var p50: Duration { .nanoseconds(Int64(histogram.withLock { $0.valueAtPercentile(50) })) }
    var p99: Duration { .nanoseconds(Int64(histogram.withLock { $0.valueAtPercentile(99) })) }
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func seconds(since start: UInt64) -> Double { Double(now() - start) / 1e9 }

/// Runs `body` `runs` times and keeps the fastest.
func bestOf(_ runs: Int, _ body: () async throws -> PersistenceRow) async throws -> PersistenceRow {
    var best: PersistenceRow?
    for _ in 0..<runs {
        let row = try await body()
        if best == nil || row.seconds < best!.seconds { best = row }
    }
    return best!
}

func persistenceRows(_ options: PersistenceBenchOptions) async throws -> [PersistenceRow] {
    let single = options.quick ? 1_000 : 10_000
    let actors = options.quick ? 1_000 : 10_000
    let perActor = options.quick ? 5 : 20
    var rows: [PersistenceRow] = []
    // The targets are the stores' (the in-memory store has none: its rows show the runtime's
    // own ceiling, what every store's rows are capped by).
    let full = !options.quick && !options.inMemory
    let postgres = options.postgres != nil
    // The targets: SQLite ≥ 250 k events/s with p99 ≤ 2 ms; PostgreSQL ≥ 60 k, p99 ≤ 5 ms.
    let targetRate: Double = postgres ? 60_000 : 250_000
    let targetP99: Duration = postgres ? .milliseconds(5) : .milliseconds(2)
    let rawName = postgres ? "raw postgres-nio, same batches" : "raw SQLiteNIO, same batches"

    if options.runs("awaited") {
        rows.append(
            try await bestOf(options.runs) {
                let rig = try await Rig.open(options, "awaited")
                let ledger = rig.system.spawn(persistent: Ledger(persistenceID: "ledger"), journal: rig.journal)
                _ = try await ledger.ask { .count($0) }  // recovered
                let latencies = Latencies()
                let start = now()
                for _ in 0..<single {
                    let sent = now()
                    _ = try await ledger.ask { .append(eventBytes, $0) }
                    latencies.record(since: sent)
                }
                let elapsed = seconds(since: start)
                try await rig.close()
                return PersistenceRow(
                    name: "persist \(grouped(single)), one actor, awaited",
                    note: "one actor; each 100-byte event's ask awaited before the next is sent (a commit per event)",
                    events: single, seconds: elapsed, p50: latencies.p50, p99: latencies.p99,
                    targets: full && !postgres ? [.totalAtMost(.milliseconds(500))] : [])
            })
    }

    if options.runs("pipelined") {
        rows.append(
            try await bestOf(options.runs) {
                let rig = try await Rig.open(options, "pipelined")
                let ledger = rig.system.spawn(persistent: Ledger(persistenceID: "ledger"), journal: rig.journal)
                _ = try await ledger.ask { .count($0) }
                let countdown = Countdown(single)
                let latencies = Latencies()
                let start = now()
                for _ in 0..<single {
                    let sent = now()
                    ledger.actorRef.ask({ .command(.append(eventBytes, $0)) }) { result in
                        latencies.record(since: sent)
                        if case .failure = result { countdown.arrive(failed: true) } else { countdown.arrive() }
                    }
                }
                await countdown.wait()
                let elapsed = seconds(since: start)
                precondition(countdown.failures.load(ordering: .relaxed) == 0, "pipelined appends failed")
                try await rig.close()
                return PersistenceRow(
                    name: "persist \(grouped(single)), one actor, pipelined",
                    note:
                        "one actor; all asks sent at once, each answered when its event is stored (events wait in the stash "
                        + "while the previous write is in flight, then go one write per stash drain)",
                    events: single, seconds: elapsed, p50: latencies.p50, p99: latencies.p99,
                    targets: full && !postgres ? [.totalAtMost(.milliseconds(50))] : [])
            })
    }

    // The journal's average batch in the "many" row: the raw batched row uses the same.
    var batchSize: Int?
    if options.runs("many") {
        rows.append(
            try await bestOf(options.runs) {
                let rig = try await Rig.open(options, "many")
                let ledgers = (0..<actors).map {
                    rig.system.spawn(
                        persistent: Ledger(persistenceID: PersistenceID("ledger-\($0)")), journal: rig.journal)
                }
                for ledger in ledgers { _ = try await ledger.ask { .count($0) } }
                let before = rig.journal.statistics
                let total = actors * perActor
                let countdown = Countdown(total)
                let latencies = Latencies()
                let start = now()
                // Closed loop: each actor has one append in flight; its reply sends the next.
                @Sendable func next(_ ledger: PersistentRef<Ledger.Command>, _ left: Int) {
                    let sent = now()
                    ledger.actorRef.ask({ .command(.append(eventBytes, $0)) }) { result in
                        latencies.record(since: sent)
                        if case .failure = result { countdown.arrive(failed: true) } else { countdown.arrive() }
                        if left > 1 { next(ledger, left - 1) }
                    }
                }
                for ledger in ledgers { next(ledger, perActor) }
                await countdown.wait()
                let elapsed = seconds(since: start)
                precondition(countdown.failures.load(ordering: .relaxed) == 0, "appends failed")
                let after = rig.journal.statistics
                let averageBatch = max(1, (after.events - before.events) / max(1, after.batches - before.batches))
                batchSize = averageBatch
                try await rig.close()
                return PersistenceRow(
                    name: "\(grouped(actors)) actors appending",
                    note: "\(grouped(actors)) actors, each with one 100-byte append in flight at a time (closed loop, "
                        + "\(perActor) each); latency is send to reply, so with \(grouped(actors)) in flight it is "
                        + "\(grouped(actors)) ÷ the rate by Little's law; group commit averaged \(averageBatch) events per batch",
                    events: total, seconds: elapsed, p50: latencies.p50, p99: latencies.p99,
                    targets: full ? [.rateAtLeast(targetRate), .rateWithin(1.3, of: rawName)] : [])
            })
    }

    if options.runs("open-loop") {
        rows.append(
            try await bestOf(options.runs) {
                let rig = try await Rig.open(options, "open-loop")
                let ledgers = (0..<actors).map {
                    rig.system.spawn(
                        persistent: Ledger(persistenceID: PersistenceID("ledger-\($0)")), journal: rig.journal)
                }
                for ledger in ledgers { _ = try await ledger.ask { .count($0) } }
                // Offered load: the target rate, spread over every millisecond for a second.
                let ticks = options.quick ? 100 : 1_000
                let perTick = Int(targetRate) / 1_000
                let total = ticks * perTick
                let countdown = Countdown(total)
                let latencies = Latencies()
                let start = now()
                var sent = 0
                for tick in 0..<ticks {
                    let due = start + UInt64(tick) * 1_000_000
                    while now() < due { usleep(50) }
                    for _ in 0..<perTick {
                        let ledger = ledgers[sent % ledgers.count]
                        sent += 1
                        let at = now()
                        ledger.actorRef.ask({ .command(.append(eventBytes, $0)) }) { result in
                            latencies.record(since: at)
                            if case .failure = result { countdown.arrive(failed: true) } else { countdown.arrive() }
                        }
                    }
                }
                await countdown.wait()
                let elapsed = seconds(since: start)
                precondition(countdown.failures.load(ordering: .relaxed) == 0, "appends failed")
                try await rig.close()
                return PersistenceRow(
                    name: "\(grouped(actors)) actors, \(grouped(Int(targetRate))) events/s offered",
                    note:
                        "open loop: \(perTick) appends every millisecond, round robin over \(grouped(actors)) actors; "
                        + "rate is what was stored per second, latency send to reply",
                    events: total, seconds: elapsed, p50: latencies.p50, p99: latencies.p99,
                    targets: full ? [.p99AtMost(targetP99), .rateAtLeast(targetRate * 0.95)] : [])
            })
    }

    if options.runs("recovery") {
        rows.append(
            try await bestOf(options.runs) {
                let rig = try await Rig.open(options, "recovery")
                let ledger = rig.system.spawn(persistent: Ledger(persistenceID: "ledger"), journal: rig.journal)
                let countdown = Countdown(single)
                for _ in 0..<single {
                    ledger.actorRef.ask({ .command(.append(eventBytes, $0)) }) { _ in countdown.arrive() }
                }
                await countdown.wait()
                ledger.stop()
                _ = await ledger.terminated()
                let start = now()
                let again = rig.system.spawn(persistent: Ledger(persistenceID: "ledger"), journal: rig.journal)
                let count = try await again.ask { .count($0) }
                let elapsed = seconds(since: start)
                precondition(count == Int64(single), "recovered \(count) of \(single) events")
                try await rig.close()
                return PersistenceRow(
                    name: "recover \(grouped(single)) events",
                    note:
                        "spawn to the first reply: claim the writer, read and decode \(grouped(single)) events, apply them",
                    events: single, seconds: elapsed,
                    targets: full && !postgres ? [.totalAtMost(.milliseconds(20))] : [])
            })
    }

    if options.runs("storm") {
        rows.append(
            try await bestOf(options.runs) { try await restartStorm(options, actors: options.quick ? 10_000 : 100_000) }
        )
    }
    if options.runs("raw") && !options.inMemory {
        // Without the "many" row there is no batch size to match: the batched raw row needs it.
        if let batchSize {
            rows.append(
                try await bestOf(options.runs) {
                    #if PostgreSQL
                        if postgres {
                            return try await rawPostgresInserts(options, events: actors * perActor, batch: batchSize)
                        }
                    #endif
                    return try await rawInserts(options, events: actors * perActor, batch: batchSize)
                })
        }
        if !postgres {
            // The floors under the awaited and recovery rows: what one awaited statement and one
            // read of the whole history cost through SQLiteNIO, before any actor or journal.
            let awaited = try await bestOf(options.runs) { try await rawAwaitedInserts(options, events: single) }
            rows.append(awaited)
            rows.append(try await bestOf(options.runs) { try await rawRead(options, events: single) })
        }
    }
    return rows
}

/// `actors` actors, each with 6 events and a snapshot after the 5th, all spawned at once and
/// asked once (10 s timeout): the time until the last answer, and how many timed out.
func restartStorm(_ options: PersistenceBenchOptions, actors: Int) async throws -> PersistenceRow {
    let rig = try await Rig.open(options, "storm")
    // The history, written straight through the store: 6 events and a snapshot per actor.
    let event = SerializedEvent(typeName: "blob", version: 1, payload: eventBytes)
    let snapshot = try SnapshottedLedger.countCodec.encode(5)
    for start in stride(from: 0, to: actors, by: 1_000) {
        let ids = (start..<min(start + 1_000, actors)).map { PersistenceID("storm-\($0)") }
        _ = try await rig.store.commit(ids.map { .claimWriter($0) })
        // Appends together, then snapshots together: runs of one kind are one statement each.
        _ = try await rig.store.commit(
            ids.map {
                .append(
                    EventAppend(
                        persistenceID: $0, epoch: WriterEpoch(1), firstSequenceNumber: 1,
                        events: Array(repeating: event, count: 6)))
            })
        _ = try await rig.store.commit(
            ids.map {
                .saveSnapshot(
                    SnapshotWrite(
                        persistenceID: $0, epoch: WriterEpoch(1),
                        snapshot: SerializedSnapshot(sequenceNumber: 5, state: snapshot), keep: 1))
            })
    }
    let countdown = Countdown(actors)
    let timedOut = Atomic<Int>(0)
    let wrong = Atomic<Int>(0)
    let start = now()
    for index in 0..<actors {
        let ledger = rig.system.spawn(
            persistent: SnapshottedLedger(persistenceID: PersistenceID("storm-\(index)")), journal: rig.journal)
        ledger.actorRef.ask(timeout: .seconds(10), { .command(.count($0)) }) { result in
            switch result {
            case .success(let count): if count != 6 { wrong.add(1, ordering: .relaxed) }
            case .failure: timedOut.add(1, ordering: .relaxed)
            }
            countdown.arrive()
        }
    }
    await countdown.wait()
    let elapsed = seconds(since: start)
    let statistics = rig.journal.statistics
    precondition(wrong.load(ordering: .relaxed) == 0, "recovered actors counted wrong")
    try await rig.close()
    let failed = timedOut.load(ordering: .relaxed)
    return PersistenceRow(
        name: "\(grouped(actors)) actors restarted from snapshots",
        note:
            "\(grouped(actors)) actors spawned at once, each with a snapshot after event 5 and one event after it, each asked "
            + "once with a 10 s timeout: rate is actors recovered per second; \(failed) timed out; the recovery gate's limit "
            + "ended at \(statistics.recoveryLimit)",
        events: actors, seconds: elapsed, failures: failed,
        targets: options.quick || options.inMemory ? [.noFailures] : [.rateAtLeast(20_000), .noFailures])
}

/// A SQLiteNIO connection on a thread of its own to a fresh file with the benchmark's events table.
func rawConnection(
    _ options: PersistenceBenchOptions, _ name: String
) async throws -> (
    SQLiteConnection, NIOThreadPool
) {
    let threads = NIOThreadPool(numberOfThreads: 1)
    threads.start()
    let connection = try await SQLiteConnection.open(
        storage: .file(path: options.path(name)), threadPool: threads, on: MultiThreadedEventLoopGroup.singleton.any())
    for pragma in [
        "PRAGMA journal_mode = WAL", "PRAGMA synchronous = \(options.synchronous)", "PRAGMA cache_size = -65536",
    ] {
        _ = try await connection.query(pragma)
    }
    _ = try await connection.query(
        """
        CREATE TABLE events (persistence_id TEXT NOT NULL, sequence_nr INTEGER NOT NULL, writer_epoch INTEGER NOT NULL,
        type_name TEXT NOT NULL, type_version INTEGER NOT NULL, payload BLOB NOT NULL, written_at INTEGER NOT NULL,
        PRIMARY KEY (persistence_id, sequence_nr))
        """)
    return (connection, threads)
}

/// The binds of one event row of `actor` (7 columns).
func rawEventBinds(actor: String, sequence: Int) -> [SQLiteData] {
    [
        .text(actor), .integer(sequence), .integer(1), .text("blob"), .integer(1), .blob(ByteBuffer(bytes: eventBytes)),
        .integer(0),
    ]
}

/// SQLiteNIO alone, one event per statement, each awaited before the next (each its own
/// transaction): the floor under "persist, one actor, awaited".
func rawAwaitedInserts(_ options: PersistenceBenchOptions, events: Int) async throws -> PersistenceRow {
    let (connection, threads) = try await rawConnection(options, "raw-awaited")
    let latencies = Latencies()
    let start = now()
    for sequence in 1...events {
        let sent = now()
        _ = try await connection.query(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)", rawEventBinds(actor: "ledger", sequence: sequence))
        latencies.record(since: sent)
    }
    let elapsed = seconds(since: start)
    try await connection.close()
    try await threads.shutdownGracefully()
    return PersistenceRow(
        name: "raw SQLiteNIO, \(grouped(events)) awaited single inserts",
        note: "SQLiteNIO alone, from a task: one INSERT per event, each awaited before the next (the floor under "
            + "the awaited row: one statement's hops to SQLiteNIO's thread and back, and SQLite's commit)",
        events: events, seconds: elapsed, p50: latencies.p50, p99: latencies.p99)
}

/// SQLiteNIO alone reading one identity's `events` events in one query: the floor under "recover".
func rawRead(_ options: PersistenceBenchOptions, events: Int) async throws -> PersistenceRow {
    let (connection, threads) = try await rawConnection(options, "raw-read")
    var binds: [SQLiteData] = []
    for sequence in 1...events { binds += rawEventBinds(actor: "ledger", sequence: sequence) }
    for chunk in stride(from: 0, to: events, by: 1_000) {
        let count = min(1_000, events - chunk)
        _ = try await connection.query(
            "INSERT INTO events VALUES "
                + Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: count).joined(separator: ", "),
            Array(binds[(chunk * 7)..<((chunk + count) * 7)]))
    }
    let start = now()
    let rows = try await connection.query(
        "SELECT sequence_nr, type_name, type_version, payload FROM events WHERE persistence_id = ? ORDER BY sequence_nr",
        [.text("ledger")])
    var bytes = 0
    for row in rows { bytes += row.column("payload")?.blob?.readableBytes ?? 0 }
    let elapsed = seconds(since: start)
    precondition(rows.count == events && bytes == events * eventBytes.count, "read \(rows.count) of \(events) events")
    try await connection.close()
    try await threads.shutdownGracefully()
    return PersistenceRow(
        name: "raw SQLiteNIO, read \(grouped(events)) events",
        note: "SQLiteNIO alone: one SELECT of one identity's \(grouped(events)) events, each row's payload taken "
            + "(the floor under the recovery row, before decoding and applying)",
        events: events, seconds: elapsed)
}

/// SQLiteNIO alone: the same rows, in transactions of `batch` events, as fast as it goes.
func rawInserts(_ options: PersistenceBenchOptions, events: Int, batch: Int) async throws -> PersistenceRow {
    let (connection, threads) = try await rawConnection(options, "raw")
    let row = "(?, ?, ?, ?, ?, ?, ?)"
    let start = now()
    var written = 0
    var sequence = 0
    while written < events {
        let count = min(batch, events - written)
        var binds: [SQLiteData] = []
        binds.reserveCapacity(count * 7)
        for index in 0..<count {
            let actor = (written + index) % 10_000
            if actor == 0 { sequence += 1 }
            binds += rawEventBinds(actor: "ledger-\(actor)", sequence: sequence)
        }
        _ = try await connection.query("BEGIN IMMEDIATE")
        _ = try await connection.query(
            "INSERT INTO events VALUES " + Array(repeating: row, count: count).joined(separator: ", "), binds)
        _ = try await connection.query("COMMIT")
        written += count
    }
    let elapsed = seconds(since: start)
    try await connection.close()
    try await threads.shutdownGracefully()
    return PersistenceRow(
        name: "raw SQLiteNIO, same batches",
        note: "SQLiteNIO alone on one thread: the same 100-byte rows in transactions of \(batch) events (the journal's "
            + "average batch above), one multi-row INSERT each; the physical limit for this store on this machine",
        events: events, seconds: elapsed)
}
