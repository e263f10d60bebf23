#if canImport(Glibc)
    import Glibc
#endif
import Troupe
import TroupePersistence
import TroupeTestSupport
import TroupePersistenceSQLite
import Logging
import Testing

// CI's sanitizer builds leave TroupePersistencePostgres out (TROUPE_CI_SANITIZER_BUILD,
// Package.swift): there the PostgreSQL cases are not compiled, and not run.
#if !TROUPE_CI_SANITIZER_BUILD
    import TroupePersistencePostgres
    import PostgresNIO
    let postgresCompiledIn = true
#else
    let postgresCompiledIn = false
#endif

/// Every behaviour is tested on each store: PostgreSQL when a server is configured
/// (`scripts/postgres.sh start` prints the environment; CI sets TROUPE_REQUIRE_POSTGRES=1, and
/// then a missing server is a failure, not a skip).
enum StoreKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case memory
    case sqlite
    case postgres

    var description: String { rawValue }

    /// The stores this run tests.
    static var available: [StoreKind] {
        !postgresCompiledIn || PostgresTestServer.configured == nil ? [.memory, .sqlite] : allCases
    }

    /// A fresh, empty store, and what to call when done with it.
    func make() async throws -> TestStore {
        switch self {
        case .memory: return TestStore(store: InMemoryStore(), directory: nil)
        case .sqlite:
            let directory = makeTemporaryDirectory()
            let store = try await SQLiteStore.open(path: directory + "/events.sqlite", synchronous: .normal)
            return TestStore(store: store, directory: directory)
        case .postgres:
            #if !TROUPE_CI_SANITIZER_BUILD
                guard let server = PostgresTestServer.configured else { throw PostgresTestServer.NotConfigured() }
                let database = try await server.createDatabase()
                let store = try await PostgresStore.connect(server.configuration(database: database))
                return TestStore(store: store, directory: nil, postgresDatabase: (server, database))
            #else
                throw PostgresTestServer.NotConfigured()
            #endif
        }
    }
}

struct TestStore: Sendable {
    let store: any PersistenceStore
    /// The SQLite store's directory (removed by `close`).
    let directory: String?
    /// The PostgreSQL store's database of its own (dropped by `close`).
    var postgresDatabase: (server: PostgresTestServer, name: String)? = nil

    func close() async {
        if let sqlite = store as? SQLiteStore { try? await sqlite.close() }
        if let directory { removeDirectory(directory) }
        #if !TROUPE_CI_SANITIZER_BUILD
            if let postgres = store as? PostgresStore { postgres.close() }
            if let (server, name) = postgresDatabase { try? await server.dropDatabase(name) }
        #endif
    }
}

/// The PostgreSQL server the environment names (TROUPE_POSTGRES_HOST, _PORT, _USER,
/// _PASSWORD, _DATABASE). Each test store gets a database of its own, dropped afterwards.
struct PostgresTestServer: Sendable {
    struct NotConfigured: Error, CustomStringConvertible {
        var description: String {
            "no PostgreSQL server configured: run scripts/postgres.sh start and export what it prints"
        }
    }

    let host: String
    let port: Int
    let user: String
    let password: String?
    let database: String

    static var configured: PostgresTestServer? {
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        guard let host = variable("TROUPE_POSTGRES_HOST") else { return nil }
        return PostgresTestServer(
            host: host, port: variable("TROUPE_POSTGRES_PORT").flatMap(Int.init) ?? 5432,
            user: variable("TROUPE_POSTGRES_USER") ?? "postgres", password: variable("TROUPE_POSTGRES_PASSWORD"),
            database: variable("TROUPE_POSTGRES_DATABASE") ?? "postgres")
    }
}

#if !TROUPE_CI_SANITIZER_BUILD
    extension PostgresTestServer {

        func configuration(database: String) -> PostgresClient.Configuration {
            PostgresClient.Configuration(
                host: host, port: port, username: user, password: password, database: database, tls: .disable)
        }

        /// Runs `sql` on the server's own database (for CREATE and DROP DATABASE), or on `other`.
        func administer(_ sql: String, on other: String? = nil) async throws {
            let client = PostgresClient(
                configuration: configuration(database: other ?? database), backgroundLogger: Logger(label: "test"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Query once `run()` has begun (as `PostgresStore.connect` does), which postgres-nio
                // otherwise warns about.
                await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                    group.addTask {
                        started.resume()
                        await client.run()
                    }
                }
                try await client.query(PostgresQuery(unsafeSQL: sql))
                group.cancelAll()
            }
        }

        func createDatabase() async throws -> String {
            let name = "troupe_test_\(UInt64.random(in: 0...UInt64.max))"
            try await administer("CREATE DATABASE \(name)")
            return name
        }

        func dropDatabase(_ name: String) async throws {
            try await administer("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        }
    }
#endif

func makeTemporaryDirectory() -> String {
    var template = Array("/tmp/troupe-persistence-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed: \(errno)")
    return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func removeDirectory(_ path: String) {
    guard let directory = opendir(path) else { return }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { unlink(path + "/" + name) }
    }
    closedir(directory)
    rmdir(path)
}

/// A fresh store of `kind`, a system and a journal on it for `body`; everything is shut down
/// and removed afterwards, also when `body` throws.
func withDurableRig(
    _ kind: StoreKind,
    _ body: (_ system: ActorSystem, _ journal: Journal, _ store: any PersistenceStore) async throws -> Void
) async throws {
    try await withDurableTestStore(kind) { system, journal, test in try await body(system, journal, test.store) }
}

/// ``withDurableRig(_:_:)`` with the whole ``TestStore`` (its directory or database).
func withDurableTestStore(
    _ kind: StoreKind, _ body: (_ system: ActorSystem, _ journal: Journal, _ test: TestStore) async throws -> Void
) async throws {
    let test = try await kind.make()
    let system = makeTestSystem()
    let journal = Journal(store: test.store)
    do { try await body(system, journal, test) } catch {
        await system.shutdown()
        await journal.shutdown()
        await test.close()
        throw error
    }
    await system.shutdown()
    await journal.shutdown()
    await test.close()
}
