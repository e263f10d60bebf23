// A child process for TroupePersistenceTests' crash tests: durable actors append to an SQLite
// store as fast as they can and print every acknowledged write, until the test kills the
// process with SIGKILL. The test then opens the store and checks that every acknowledged event
// is there, in order, with no batch half-applied.
//
// Usage: troupe-persistence-crash-writer sqlite PATH ACTORS
//        troupe-persistence-crash-writer postgres DATABASE ACTORS   (server from TROUPE_POSTGRES_HOST, _PORT, _USER)
// Prints `ACK <actor> <last sequence number>` per acknowledged command (written with write(2),
// so a line printed is a line the parent can read even if the process dies right after).

#if canImport(Glibc)
    import Glibc
#endif
import Troupe
import TroupePersistence
import TroupePersistenceSQLite
// Absent from CI's sanitizer builds (TROUPE_CI_SANITIZER_BUILD, Package.swift).
#if !TROUPE_CI_SANITIZER_BUILD
    import TroupePersistencePostgres
    import PostgresNIO
#endif

/// Appends commands of 1 to 3 events; each event names its command and its size, so the
/// checker can see whether a command's events are all there.
struct CrashLedger: EventSourcedActor {
    enum Command: Sendable { case append(size: Int, Reply<Int64>) }
    struct Event: Sendable { var text: String }

    let persistenceID: PersistenceID
    var emptyState: Int64 { 0 }
    static let eventCodec = PersistenceCodec<Event>(
        typeName: "crash-event", encode: { Array($0.text.utf8) },
        decode: { Event(text: String(decoding: $0, as: UTF8.self)) })

    func handle(_ command: Command, state: Int64, context: EventSourcedContext<Self>) -> Effect<Self> {
        switch command {
        case .append(let size, let reply):
            // "<first sequence number of the command>/<size>": the checker groups by it.
            let first = context.lastSequenceNumber + 1
            return .persist((0..<size).map { _ in Event(text: "\(first)/\(size)") }).thenReply(reply) { $0 }
        }
    }

    func apply(_ event: Event, to state: inout Int64) { state += 1 }
}

func emit(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
guard arguments.count == 4, ["sqlite", "postgres"].contains(arguments[1]), let actorCount = Int(arguments[3]),
    actorCount > 0
else {
    emit("usage: troupe-persistence-crash-writer sqlite PATH ACTORS | postgres DATABASE ACTORS")
    exit(2)
}

func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

let store: any PersistenceStore
if arguments[1] == "sqlite" {
    store = try await SQLiteStore.open(path: arguments[2], synchronous: .normal)
} else {
    #if !TROUPE_CI_SANITIZER_BUILD
        store = try await PostgresStore.connect(
            PostgresClient.Configuration(
                host: environment("TROUPE_POSTGRES_HOST") ?? "127.0.0.1",
                port: environment("TROUPE_POSTGRES_PORT").flatMap { Int($0) } ?? 5432,
                username: environment("TROUPE_POSTGRES_USER") ?? "postgres",
                password: environment("TROUPE_POSTGRES_PASSWORD"),
                database: arguments[2], tls: .disable))
    #else
        emit("this build has no TroupePersistencePostgres")
        exit(2)
    #endif
}
let journal = Journal(store: store)
let system = ActorSystem(configuration: .init(name: "crash-writer"))

@Sendable func appendForever(_ ledger: PersistentRef<CrashLedger.Command>, actor: Int, round: Int) {
    ledger.actorRef.ask({ .command(.append(size: round % 3 + 1, $0)) }) { result in
        guard case .success(let last) = result else {
            emit("FAILED \(actor) \(result)")
            exit(1)
        }
        emit("ACK \(actor) \(last)")
        appendForever(ledger, actor: actor, round: round + 1)
    }
}

for actor in 0..<actorCount {
    let ledger = system.spawn(persistent: CrashLedger(persistenceID: PersistenceID("crash-\(actor)")), journal: journal)
    appendForever(ledger, actor: actor, round: actor)
}
emit("READY")
while true { sleep(60) }
