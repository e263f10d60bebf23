// Reactor's flow on Troupe, with TroupePromises' FetchFlow: is there valid persisted data? Use it.
// Otherwise fetch from the network (if connected), parse, persist, and report any error on the
// way. The store is a durable actor on an SQLite file (TroupePersistence), the network an actor
// simulated in process; each path of the flow is run and checked: a network fetch that is saved,
// a cache hit, stale data refreshed, fresh data on demand, the errors (offline, request failed,
// unparsable data), and a restart that finds what was saved on disk, with the network offline.

import Foundation
import Synchronization
import ExampleSupport
import Troupe
import TroupePersistence
import TroupePersistenceSQLite
import TroupePromises

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// MARK: The model and its mapping

/// What the network sends: a decoded JSON object, as strings.
typealias JSONObject = [String: String]

struct Author: Sendable, Equatable, CustomStringConvertible {
    let name: String
    var description: String { "Author(\(name))" }
}

enum MappingError: Error, CustomStringConvertible {
    case invalid(String)
    var description: String {
        switch self {
        case .invalid(let why): "cannot map to Author: \(why)"
        }
    }
}

extension Author {
    /// JSON → model.
    static func map(_ json: JSONObject) throws(MappingError) -> Author {
        guard let name = json["name"], !name.isEmpty else { throw .invalid("no name in \(json)") }
        return Author(name: name)
    }

    /// Model → JSON, as the store keeps it.
    var json: JSONObject { ["name": name] }
}

// MARK: Persistence

enum StoreError: Error, CustomStringConvertible {
    case missing(String)
    case stale(String)
    var description: String {
        switch self {
        case .missing(let key): "nothing stored for '\(key)'"
        case .stale(let key): "the copy of '\(key)' is stale"
        }
    }
}

/// The persistence store: authors kept as JSON, each valid until invalidated. A durable-state
/// actor: each change is saved (as the next revision of its whole state) before it is
/// answered, and a new incarnation — after a restart of the program — reads the saved state back.
struct AuthorStore: DurableStateActor {
    enum Command: Sendable {
        case load(String, Reply<Author>)
        case save(String, Author, Reply<Author>)
        case invalidate(String, Reply<Bool>)
        case keys(Reply<[String]>)
    }

    struct Entry: Codable, Sendable {
        var json: JSONObject
        var valid: Bool
    }

    var persistenceID: PersistenceID { "authors" }
    var emptyState: [String: Entry] { [:] }
    static let stateCodec = PersistenceCodec<[String: Entry]>.json(typeName: "author-store")

    func handle(
        _ command: Command, state: [String: Entry], context: DurableStateContext<Self>
    ) -> StateEffect<Self> {
        switch command {
        case .load(let key, let reply):
            guard let entry = state[key] else {
                reply.fail(StoreError.missing(key))
                return .none
            }
            guard entry.valid else {
                reply.fail(StoreError.stale(key))
                return .none
            }
            reply.complete { try Author.map(entry.json) }
            return .none
        case .save(let key, let author, let reply):
            var state = state
            state[key] = Entry(json: author.json, valid: true)
            return .save(state).thenReply(reply) { _ in author }  // answered once it is on disk
        case .invalidate(let key, let reply):
            guard state[key] != nil else { return .reply(reply, false) }
            var state = state
            state[key]?.valid = false
            return .save(state).thenReply(reply) { _ in true }
        case .keys(let reply):
            return .reply(reply, state.keys.sorted())
        }
    }
}

// MARK: The (simulated) network

/// How a request is made.
struct Resource: Sendable, CustomStringConvertible {
    let path: String
    var method = "GET"
    var headers: [String: String] = ["Accept": "application/json"]
    var description: String { "\(method) \(path)" }
}

enum NetworkError: Error, CustomStringConvertible {
    case offline
    case status(Int, Resource)
    var description: String {
        switch self {
        case .offline: "no internet connection"
        case .status(let code, let resource): "\(resource) failed with HTTP \(code)"
        }
    }

    var isOffline: Bool {
        if case .offline = self { return true }
        return false
    }

    var statusCode: Int? {
        if case .status(let code, _) = self { return code }
        return nil
    }
}

/// A server in process: serves JSON objects by path, when "connected".
struct Network: ActorDefinition {
    enum Message: Sendable {
        case request(Resource, Reply<JSONObject>)
        case setConnected(Bool)
        case requestCount(Reply<Int>)
    }

    let server: [String: JSONObject]
    var connected = true
    var requests = 0

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .request(let resource, let reply):
            guard connected else {
                reply.fail(NetworkError.offline)
                return
            }
            requests += 1
            guard let body = server[resource.path] else {
                reply.fail(NetworkError.status(404, resource))
                return
            }
            reply.succeed(body)
        case .setConnected(let connected):
            self.connected = connected
        case .requestCount(let reply):
            reply.succeed(requests)
        }
    }
}

// MARK: Checks

/// The steps the flow ran, and why loading failed, as its observers saw them.
final class FlowLog: Sendable {
    private let state = Mutex<(steps: [String], misses: [String])>(([], []))
    func step(_ line: String) { state.withLock { $0.steps.append(line) } }
    func miss(_ line: String) { state.withLock { $0.misses.append(line) } }
    /// Returns what was logged since the last call, and clears it.
    func take() -> (steps: [String], misses: [String]) {
        state.withLock { state in
            defer { state = ([], []) }
            return state
        }
    }
}

/// What a fetch should end with.
enum Expected {
    case author(String)
    case error(@Sendable (any Error) -> Bool)
}

/// The error at the root of an ask's error (an `AskError.failed` carries the handler's error).
func rootCause(_ error: any Error) -> any Error {
    (error as? AskError)?.rootCause ?? error
}

// MARK: The program

@main
struct ReactorFlow {
    static let load = ["load▶", "load✓"]
    static let miss = ["load▶", "load✗"]
    static let fetched = ["source▶", "source✓", "save▶", "save✓"]
    static let notFetched = ["source▶", "source✗"]

    static func main() async throws {
        // A throw-away database: a real SQLite file, removed at the end.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "reactor-flow-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("authors.sqlite").path
        let sqlite = try await SQLiteStore.open(path: path)
        let journal = Journal(store: sqlite)

        let system = ActorSystem(configuration: ActorSystem.Configuration(name: "reactor"))
        let store = system.spawn(persistent: AuthorStore(), journal: journal, options: SpawnOptions(name: "store"))
        let network = system.spawn(
            Network(server: [
                "/authors/ada": ["name": "Ada Lovelace"],
                "/authors/grace": ["name": "Grace Hopper"],
                "/authors/broken": ["nickname": "no name here"],
            ]),
            options: SpawnOptions(name: "network"))

        // The flow: each step is a promise of an actor's answer. Parsing is part of the source step.
        let source: @Sendable (String) -> Promise<Author> = { key in
            network.askPromise { .request(Resource(path: "/authors/\(key)"), $0) }
                .map { json in try Author.map(json) }
        }
        var flow = FetchFlow<String, Author>(
            loadFromPersistence: { key in store.actorRef.askPromise { .command(.load(key, $0)) } },
            source: source,
            saveToPersistence: { key, author in store.actorRef.askPromise { .command(.save(key, author, $0)) } })
        // Extending the persistence step: see why the store missed, an error the fallback hides.
        let log = FlowLog()
        flow.observeLoadFailure { key, error in log.miss("\(key): \(rootCause(error))") }
        flow.observe { event in
            switch event {
            case .started(let step, _): log.step("\(short(step))▶")
            case .succeeded(let step, _, _): log.step("\(short(step))✓")
            case .failed(let step, _, _): log.step("\(short(step))✗")
            }
        }

        /// Waits for a fetch, then checks the steps it took and its outcome.
        func run(_ title: String, _ fetch: Promise<Author>, steps expected: [String], _ expect: Expected) async {
            step(title)
            let outcome: Result<Author, any Error>
            do { outcome = .success(try await fetch.get()) } catch { outcome = .failure(rootCause(error)) }
            let (steps, misses) = log.take()
            for miss in misses { print("cache miss: \(miss)") }
            print("steps: \(steps.joined(separator: " "))")
            switch outcome {
            case .success(let author): print("result: \(author)")
            case .failure(let error): print("error:  \(error)")
            }
            check(steps == expected, "the flow took the steps \(expected) (took \(steps))")
            switch (expect, outcome) {
            case (.author(let name), .success(let author)):
                check(author.name == name, "expected \(name), got \(author)")
            case (.error(let matches), .failure(let error)):
                check(matches(error), "unexpected error \(error)")
            default:
                fail("unexpected outcome \(outcome)")
            }
        }

        await run(
            "Nothing stored yet: fetch from the network, parse, persist", flow.fetch("ada"),
            steps: miss + fetched, .author("Ada Lovelace"))
        let keys = try await store.ask { .keys($0) }
        print("the store now holds: \(keys)")
        check(keys == ["ada"], "the fetched author was saved")

        network.tell(.setConnected(false))
        print("\n(the network is now offline)")
        await run(
            "Valid persisted data: used as is, without the network", flow.fetch("ada"),
            steps: load, .author("Ada Lovelace"))
        await run(
            "Nothing stored and no connection: an error", flow.fetch("grace"),
            steps: miss + notFetched, .error { ($0 as? NetworkError)?.isOffline == true })

        network.tell(.setConnected(true))
        print("\n(the network is back)")
        await run(
            "The request fails: an error, nothing saved", flow.fetch("nobody"),
            steps: miss + notFetched, .error { ($0 as? NetworkError)?.statusCode == 404 })
        await run(
            "The data cannot be parsed: an error, nothing saved", flow.fetch("broken"),
            steps: miss + notFetched, .error { $0 is MappingError })
        let keysAfterErrors = try await store.ask { .keys($0) }
        check(keysAfterErrors == ["ada"], "failed fetches saved nothing (store holds \(keysAfterErrors))")

        check(try await store.ask { .invalidate("ada", $0) }, "ada was stored, and is now invalid")
        await run(
            "Persisted data no longer valid: refreshed from the network", flow.fetch("ada"),
            steps: miss + fetched, .author("Ada Lovelace"))
        await run(
            "Fresh data wanted: straight to the network, then saved", flow.fetchFromSource("grace"),
            steps: fetched, .author("Grace Hopper"))

        step("Without persistence: loading always falls back to the source, nothing is kept")
        let direct = FetchFlow<String, Author>(source: source)
        let author = try await direct.fetch("grace").get()
        print("result: \(author)")
        check(author == Author(name: "Grace Hopper"), "the source answered")

        let requests = try await network.ask { .requestCount($0) }
        print("\nrequests that reached the server: \(requests)")
        // ada, nobody, broken, ada (stale), grace (fresh), grace (no persistence); not the
        // cache hit, not the offline attempt.
        check(requests == 6, "only the paths that needed the network used it (got \(requests))")

        await system.shutdown()
        await journal.shutdown()
        try await sqlite.close()

        step("The program restarts, offline: what was saved is read back from the file")
        let reopened = try await SQLiteStore.open(path: path)
        let secondJournal = Journal(store: reopened)
        let second = ActorSystem(configuration: ActorSystem.Configuration(name: "reactor-restarted"))
        let storeAgain = second.spawn(persistent: AuthorStore(), journal: secondJournal)
        let offline = second.spawn(Network(server: [:], connected: false))
        let afterRestart = FetchFlow<String, Author>(
            loadFromPersistence: { key in storeAgain.actorRef.askPromise { .command(.load(key, $0)) } },
            source: { key in
                offline.askPromise { .request(Resource(path: "/authors/\(key)"), $0) }.map { try Author.map($0) }
            },
            saveToPersistence: { key, author in storeAgain.actorRef.askPromise { .command(.save(key, author, $0)) } })
        let keysAfterRestart = try await storeAgain.ask { .keys($0) }
        print("the store holds after the restart: \(keysAfterRestart)")
        check(keysAfterRestart == ["ada", "grace"], "both saved authors survived the restart")
        let grace = try await afterRestart.fetch("grace").get()
        print("result: \(grace)")
        check(grace == Author(name: "Grace Hopper"), "grace came from the file, with the network offline")
        let reachedServer = try await offline.ask { .requestCount($0) }
        check(reachedServer == 0, "nothing reached the network after the restart (got \(reachedServer))")
        await second.shutdown()
        await secondJournal.shutdown()
        try await reopened.close()
        print("\nreactor-flow: all checks passed")
    }

    static func short(_ step: FetchStep) -> String {
        switch step {
        case .loadFromPersistence: "load"
        case .source: "source"
        case .saveToPersistence: "save"
        }
    }
}
