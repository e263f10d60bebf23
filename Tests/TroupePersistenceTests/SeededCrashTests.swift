#if canImport(Glibc)
    import Glibc
#endif
import Testing
import Troupe
import TroupePersistence
import TroupeTesting

/// Appends commands of 1 to 3 events, each event naming its command ("<first number>/<size>"),
/// so that a check can see whether a command's events are all there.
struct ChunkLedger: EventSourcedActor {
    enum Command: Sendable { case append(size: Int, Reply<Int64>) }
    struct Event: Sendable { var text: String }

    let persistenceID: PersistenceID
    var emptyState: Int64 { 0 }
    static let eventCodec = PersistenceCodec<Event>(
        typeName: "chunk", encode: { Array($0.text.utf8) }, decode: { Event(text: String(decoding: $0, as: UTF8.self)) }
    )
    static var snapshots: SnapshotPolicy<Int64> {
        .every(
            4, keep: 1,
            codec: PersistenceCodec(
                typeName: "count", encode: { Array(String($0).utf8) },
                decode: { Int64(String(decoding: $0, as: UTF8.self)) ?? -1 }))
    }

    func handle(_ command: Command, state: Int64, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .append(let size, let reply):
            let first = context.lastSequenceNumber + 1
            return .persist((0..<size).map { _ in Event(text: "\(first)/\(size)") }).thenReply(reply) { $0 }
        }
    }

    func apply(_ event: Event, to state: inout Int64) { state += 1 }
}

/// The store crashes at a seeded commit and point (before the write, after it but before the
/// acknowledgement, mid-batch, during a snapshot); the actors run on a seeded schedule. After
/// the "restart" on what the store kept: every acknowledged event is there, in order, no
/// command's events half there, and the actors recover. 10,000 schedules
/// (TROUPE_CRASH_SCHEDULES to change), each replayable by its seed.
@Suite struct SeededCrashTests {
    static var schedules: Int {
        getenv("TROUPE_CRASH_SCHEDULES").flatMap { Int(String(cString: $0)) } ?? 10_000
    }

    @Test func noAcknowledgedEventIsLostOrHalfStoredWhereverTheStoreCrashes() async throws {
        var crashesByPoint: [CrashingStore.CrashPoint: Int] = [:]
        for seed in 0..<UInt64(Self.schedules) {
            let store = CrashingStore(seed: seed, withinCommits: 12)
            let acknowledged = try run(seed: seed, on: store)
            if store.hasCrashed { crashesByPoint[store.point, default: 0] += 1 }
            var failure = try await check(store.disk, acknowledged: acknowledged)
            if failure == nil { failure = try await recover(seed: seed, from: store.disk) }
            if let failure {
                Issue.record("seed \(seed), crash at commit \(store.crashingCommit) \(store.point): \(failure)")
                return
            }
        }
        // Every kind of crash happened (the schedules are long enough to reach them).
        #expect(Set(crashesByPoint.keys) == Set(CrashingStore.CrashPoint.allCases), "\(crashesByPoint)")
    }

    /// Three ledgers append until the store crashes (or all is written); returns the last
    /// acknowledged number of each.
    func run(seed: UInt64, on store: CrashingStore) throws -> [Int64] {
        let deterministic = DeterministicSystem(seed: seed)
        let journal = Journal(store: store, executor: deterministic.system.taskExecutor)
        let acknowledged = AcknowledgedNumbers(count: 3)
        for index in 0..<3 {
            let ledger = deterministic.system.spawn(
                persistent: ChunkLedger(persistenceID: PersistenceID("ledger-\(index)")), journal: journal)
            for round in 0..<6 {
                ledger.actorRef.ask({ .command(.append(size: (round + index) % 3 + 1, $0)) }) { result in
                    if case .success(let last) = result { acknowledged.record(last, for: index) }
                }
            }
        }
        _ = deterministic.runUntilIdle()
        deterministic.shutdown()
        return acknowledged.values
    }

    /// The restart: the ledgers recover from what the store kept and count it all.
    func recover(seed: UInt64, from disk: InMemoryStore) async throws -> String? {
        let deterministic = DeterministicSystem(seed: seed)
        defer { deterministic.shutdown() }
        let journal = Journal(store: disk, executor: deterministic.system.taskExecutor)
        for index in 0..<3 {
            let id = PersistenceID("ledger-\(index)")
            let ledger = deterministic.system.spawn(persistent: ChunkLedger(persistenceID: id), journal: journal)
            let counted = try await ledger.ask { .append(size: 1, $0) } - 1
            let stored = Int64(disk.events(of: id).count) - 1  // including the one just appended
            if counted != stored { return "\(id) recovered \(counted) events of \(stored)" }
        }
        return nil
    }

    /// What is wrong with what `disk` kept, or nil.
    func check(_ disk: InMemoryStore, acknowledged: [Int64]) async throws -> String? {
        for index in 0..<3 {
            let id = PersistenceID("ledger-\(index)")
            let events = disk.events(of: id)
            let numbers = events.map(\.sequenceNumber)
            if numbers != (0..<numbers.count).map({ Int64($0) + 1 }) {
                return "\(id): a gap or a duplicate in \(numbers)"
            }
            if Int64(numbers.count) < acknowledged[index] {
                return "\(id): \(acknowledged[index]) acknowledged, \(numbers.count) stored"
            }
            var byCommand: [String: Int] = [:]
            for event in events { byCommand[String(decoding: event.event.payload, as: UTF8.self), default: 0] += 1 }
            for (command, count) in byCommand where Int(command.split(separator: "/").last ?? "") != count {
                return "\(id): command \(command) has \(count) of its events"
            }
            // A snapshot never claims more than the events stored.
            if let snapshot = disk.snapshots(of: id).last, snapshot.sequenceNumber > Int64(numbers.count) {
                return "\(id): a snapshot at \(snapshot.sequenceNumber) beyond the \(numbers.count) events"
            }
        }
        return nil
    }
}

/// The test thread's record of acknowledgements (the deterministic system runs every callback
/// on it).
final class AcknowledgedNumbers: @unchecked Sendable {  // one thread: the deterministic system's caller
    private(set) var values: [Int64]
    init(count: Int) { values = Array(repeating: 0, count: count) }
    func record(_ last: Int64, for index: Int) { values[index] = max(values[index], last) }
}
