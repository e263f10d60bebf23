import Foundation
import Testing
import TroupePersistence
import TroupePersistenceSQLite
#if !TROUPE_CI_SANITIZER_BUILD
    import TroupePersistencePostgres
#endif
import TroupeTestSupport

/// A writer killed with SIGKILL in the middle of a stream of acknowledged writes: after a
/// restart every acknowledged event is there, in order, with no command's events half-stored
/// and no duplicate. 20 runs per store (SQLite, and PostgreSQL when a server is configured),
/// each killed after a different delay.
@Suite(.serialized) struct CrashTests {
    static var writer: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("troupe-persistence-crash-writer")
    }

    static var runs: [(StoreKind, Int)] {
        StoreKind.available.filter { $0 != .memory }.flatMap { kind in (0..<20).map { (kind, $0) } }
    }

    @Test(arguments: runs) func everyAcknowledgedEventSurvivesAKill(kind: StoreKind, run: Int) async throws {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/crash.sqlite"
        #if !TROUPE_CI_SANITIZER_BUILD
            let server = PostgresTestServer.configured
            let database = kind == .postgres ? try await server?.createDatabase() : nil
            defer {
                if let database, let server { Task { try? await server.dropDatabase(database) } }
            }
        #else
            let database: String? = nil
        #endif
        let actors = 8
        let acknowledged = TestLock<[Int: Int64]>([:])
        let ready = TestLock(false)
        let process = Process()
        process.executableURL = Self.writer
        process.arguments = [kind.rawValue, database ?? path, "\(actors)"]
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = "detect_leaks=0"  // killed on purpose: nothing to check at exit
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        let pending = TestLock(Data())
        pipe.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            if chunk.isEmpty {
                handle.readabilityHandler = nil
                return
            }
            let lines = pending.withLock { data -> [String] in
                data.append(chunk)
                var lines: [String] = []
                while let newline = data.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: data[data.startIndex..<newline], as: UTF8.self))
                    data.removeSubrange(data.startIndex...newline)
                }
                return lines
            }
            for line in lines {
                let parts = line.split(separator: " ")
                if parts.first == "READY" { ready.withLock { $0 = true } }
                if parts.count == 3, parts[0] == "ACK", let actor = Int(parts[1]), let last = Int64(parts[2]) {
                    acknowledged.withLock { $0[actor] = max($0[actor] ?? 0, last) }
                }
            }
        }
        try process.run()
        await waitUntil(timeout: .seconds(60), "the writer is ready") { ready.withLock { $0 } }
        await waitUntil(timeout: .seconds(60), "a first acknowledgement") { !acknowledged.withLock { $0.isEmpty } }
        // Kill it after 100 to 575 ms of writing: a different point of the stream each run.
        try await Task.sleep(for: .milliseconds(100 + 25 * run))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let acked = acknowledged.withLock { $0 }
        #expect(acked.values.reduce(0, +) > 0, "the writer acknowledged nothing before it was killed")

        let store: any PersistenceStore
        #if !TROUPE_CI_SANITIZER_BUILD
            if let database, let server {
                store = try await PostgresStore.connect(server.configuration(database: database))
            } else {
                store = try await SQLiteStore.open(path: path)
            }
        #else
            store = try await SQLiteStore.open(path: path)
        #endif
        for actor in 0..<actors {
            let history = try await store.history(of: PersistenceID("crash-\(actor)"))
            let numbers = history.events.map(\.sequenceNumber)
            #expect(numbers == (0..<numbers.count).map { Int64($0) + 1 }, "actor \(actor): a gap or a duplicate")
            #expect(Int64(numbers.count) >= acked[actor] ?? 0, "actor \(actor): acknowledged events lost")
            // Each command's events say "<its first number>/<its size>": all of them or none.
            var byCommand: [String: Int] = [:]
            for event in history.events {
                byCommand[String(decoding: event.event.payload, as: UTF8.self), default: 0] += 1
            }
            for (command, count) in byCommand {
                let size = Int(command.split(separator: "/").last ?? "") ?? -1
                #expect(count == size, "actor \(actor): command \(command) stored \(count) of its events")
            }
        }
        if let sqlite = store as? SQLiteStore { try await sqlite.close() }
        #if !TROUPE_CI_SANITIZER_BUILD
            if let postgres = store as? PostgresStore { postgres.close() }
        #endif
    }
}
