// `troupe-bench persistence`: durable actors on SQLite (issue 31), beside the raw library
// doing the same inserts in the same batches.

import ArgumentParser
import Dispatch
import Foundation
import Synchronization

struct PersistenceBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "persistence",
        abstract:
            "TroupePersistence on SQLite, PostgreSQL or in memory: persist and recover latency, group-commit throughput, the raw floors.",
        discussion: """
            The database is a file in a fresh temporary directory (--directory to choose the disk), \
            WAL mode, synchronous=NORMAL unless --synchronous says otherwise. Each row says what it \
            measures; the raw rows are the database library alone: the same inserts in the same batches \
            (the batched row needs the "many" row, whose batch size it copies), and on SQLite one awaited \
            insert at a time and one read of a whole history.
            """)

    @ParentCommand var parent: TroupeBench
    var quick: Bool { parent.quick }

    @Option(help: "Where the database files go (default: a new directory under /tmp).")
    var directory: String?

    @Option(help: "SQLite synchronous mode: NORMAL (default), FULL or OFF.")
    var synchronous = "NORMAL"

    @Option(
        help: ArgumentHelp(
            "The store: sqlite (default), postgres (the server TROUPE_POSTGRES_HOST, _PORT, _USER, _PASSWORD, "
                + "_DATABASE name, as scripts/postgres.sh start prints; each run gets a database of its own), or "
                + "memory (InMemoryStore: no database, so the rows show the journal's and the actors' own cost)."))
    var store = "sqlite"

    @Option(
        help: ArgumentHelp(
            "Where the journal's commits run: global (default, Swift's global executor, the Journal's default) or "
                + "workers (the system's task executor, Troupe's workers)."))
    var journalExecutor = "global"

    @Option(help: "Troupe workers (default: one per CPU).")
    var workers: Int?

    // Not `--runs`: the parent command's `--runs` (for the workloads) would take it.
    @Option(name: .customLong("best-of"), help: "Best of this many runs per row (default 3; 1 with --quick).")
    var runs: Int?

    @Option(
        name: .customLong("row"),
        help:
            "Only these rows (repeatable): awaited, pipelined, many, open-loop, recovery, storm, raw (batched: with many)."
    )
    var rows: [String] = []

    func validate() throws {
        guard ["NORMAL", "FULL", "OFF"].contains(synchronous.uppercased()) else {
            throw ValidationError("--synchronous takes NORMAL, FULL or OFF, got \(synchronous)")
        }
        if let runs, runs < 1 { throw ValidationError("--best-of needs a positive integer, got \(runs)") }
        guard ["global", "workers"].contains(journalExecutor) else {
            throw ValidationError("--journal-executor takes global or workers, got \(journalExecutor)")
        }
        if let workers, workers < 1 { throw ValidationError("--workers needs a positive integer, got \(workers)") }
        guard ["sqlite", "postgres", "memory"].contains(store) else {
            throw ValidationError("--store takes sqlite, postgres or memory, got \(store)")
        }
        #if !PostgreSQL
            if store == "postgres" {
                throw ValidationError(
                    "this troupe-bench was built without the PostgreSQL trait (--disable-default-traits): "
                        + "build it with the default traits for --store postgres")
            }
        #endif
        if store == "postgres" && ProcessInfo.processInfo.environment["TROUPE_POSTGRES_HOST"] == nil {
            throw ValidationError("--store postgres needs TROUPE_POSTGRES_HOST (eval \"$(scripts/postgres.sh start)\")")
        }
    }

    func run() throws {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<[PersistenceRow], any Error>?>(nil)
        Task.detached {
            let outcome: Result<[PersistenceRow], any Error>
            do { outcome = .success(try await self.measure()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        let met = printPersistenceReport(try result.withLock { $0! }.get())
        print("\nTargets: \(met ? "all met" : "NOT all met (see MISSED)").")
    }

    func measure() async throws -> [PersistenceRow] {
        let base = directory ?? NSTemporaryDirectory() + "troupe-persistence-bench-\(getpid())"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { if directory == nil { try? FileManager.default.removeItem(atPath: base) } }
        let options = PersistenceBenchOptions(
            quick: quick, runs: runs ?? (quick ? 1 : 3), directory: base, synchronous: synchronous.uppercased(),
            postgres: store == "postgres" ? PostgresBenchServer.fromEnvironment() : nil, inMemory: store == "memory",
            only: Set(rows), journalOnWorkers: journalExecutor == "workers", workers: workers)
        print(
            "# troupe-bench persistence --store \(store)\(quick ? " --quick" : "")"
                + " --journal-executor \(journalExecutor)\(workers.map { " --workers \($0)" } ?? ""): best of \(options.runs)"
        )
        if options.inMemory {
            print(
                "Machine: \(ProcessInfo.processInfo.activeProcessorCount) CPUs. InMemoryStore: no database; no targets "
                    + "(the stores' rows are capped by these).")
        } else if let server = options.postgres {
            print(
                "Machine: \(ProcessInfo.processInfo.activeProcessorCount) CPUs. PostgreSQL at \(server.host):\(server.port), "
                    + "synchronous_commit=on, a fresh database per run, on the same host.")
        } else {
            print(
                "Machine: \(ProcessInfo.processInfo.activeProcessorCount) CPUs. SQLite in WAL mode, "
                    + "synchronous=\(options.synchronous), files under \(base).")
        }
        return try await persistenceRows(options)
    }
}

struct PersistenceBenchOptions {
    var quick: Bool
    var runs: Int
    var directory: String
    var synchronous: String
    /// The PostgreSQL server, when the rows run on PostgreSQL.
    var postgres: PostgresBenchServer?
    /// The rows run on `InMemoryStore`: the runtime's own cost, no database.
    var inMemory = false
    /// The rows asked for (empty: all).
    var only: Set<String> = []
    /// The journal's commits run on the system's task executor (else Swift's global executor).
    var journalOnWorkers = false
    /// Troupe workers (nil: one per CPU).
    var workers: Int?

    /// Whether the row named `key` runs.
    func runs(_ key: String) -> Bool { only.isEmpty || only.contains(key) }

    /// A fresh database path for one run of one row.
    func path(_ name: String) -> String {
        let path = directory + "/\(name)-\(UUID().uuidString).sqlite"
        return path
    }
}
