import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// A counter with an enum protocol.
struct Counter: ActorDefinition {
    enum Message: Sendable {
        case add(Int)
        case get(Reply<Int>)
    }

    var total: Int

    init(total: Int = 0) { self.total = total }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .add(let amount): total += amount
        case .get(let reply): reply.succeed(total)
        }
    }
}

/// A pool member that records who handled what.
struct PoolWorker: ActorDefinition {
    enum Message: Sendable {
        /// Records (member, id).
        case job(Int)
        /// Records (member, id), then holds the worker thread until the gate opens.
        case hold(Int, Gate)
        /// Answers with the member's index.
        case whoAmI(Reply<Int>)
        /// Answers with the member's label.
        case label(Reply<String>)
        /// Answers with the number of jobs handled.
        case handled(Reply<Int>)
        /// Throws.
        case fail
        /// Keeps the reply without answering (for timeouts).
        case keep(Reply<Int>)
        /// Records (member, id) keyed for hashing.
        case keyed(key: String, id: Int)
        /// Answers with the member's index; routed by `key` in hashing tests.
        case route(key: UInt64, Reply<Int>)
    }

    struct Failure: Error {}

    var index: Int
    var label = ""
    var log: Recorder<Handled>?
    var count = 0
    var kept: [Reply<Int>] = []

    init(index: Int, log: Recorder<Handled>? = nil) {
        self.index = index
        self.log = log
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .job(let id), .keyed(_, let id):
            count += 1
            log?.append(Handled(member: index, id: id))
        case .hold(let id, let gate):
            count += 1
            log?.append(Handled(member: index, id: id))
            gate.enter()
        case .whoAmI(let reply), .route(_, let reply): reply.succeed(index)
        case .label(let reply): reply.succeed(label)
        case .handled(let reply): reply.succeed(count)
        case .fail: throw Failure()
        case .keep(let reply): kept.append(reply)
        }
    }
}

struct Handled: Sendable, Hashable {
    let member: Int
    let id: Int
}

// MARK: The seeds' session example

/// The store behind sessions: a service, not an actor.
protocol SessionProvider: Sendable {
    func user(for token: String) -> String?
}

final class SessionStore: SessionProvider, Sendable {
    private let sessions = Mutex<[String: String]>([:])

    func save(token: String, user: String) { sessions.withLock { $0[token] = user } }
    func clear() { sessions.withLock { $0.removeAll() } }
    func user(for token: String) -> String? { sessions.withLock { $0[token] } }
    var count: Int { sessions.withLock { $0.count } }
}

struct Login: Sendable {
    let email: String
    let password: String
}

struct Logout: Sendable {}

struct CurrentUser: Sendable {}

/// Checks credentials (per-type handlers).
struct AuthActor: HandlerActor {
    let realm: String

    mutating func setup(_ on: inout MessageHandlers<AuthActor>) {
        on.result(Login.self) { auth, login, _ in
            guard login.password == "secret" else { throw AuthError.badPassword(login.email) }
            return "token-\(login.email)@\(auth.realm)"
        }
    }
}

enum AuthError: Error, Equatable {
    case badPassword(String)
}

/// Oscar's session actor: logs in through the auth actor (a future reaction) and keeps the
/// session in the store it resolves from the service locator.
struct SessionActor: HandlerActor {
    var auth: ActorRef<AnyMessage>?
    var store: SessionStore?
    var user: String?

    mutating func setup(_ on: inout MessageHandlers<SessionActor>) {
        on.future(Login.self, replying: String.self) { session, login, context, reply in
            let store = try session.resolveStore(context)
            let auth = try session.resolveAuth(context)
            session.user = login.email
            Task {
                do {
                    let token: String = try await auth.ask(login)
                    store.save(token: token, user: login.email)
                    reply.succeed(token)
                } catch {
                    reply.fail(error)
                }
            }
        }
        on.void(Logout.self) { session, _, context in
            try session.resolveStore(context).clear()
            session.user = nil
        }
        on.result(CurrentUser.self) { session, _, _ in session.user ?? "nobody" }
    }

    private mutating func resolveStore(_ context: ActorContext<AnyMessage>) throws -> SessionStore {
        if let store { return store }
        let resolved = try context.service(SessionStore.self)
        store = resolved
        return resolved
    }

    private mutating func resolveAuth(_ context: ActorContext<AnyMessage>) throws -> ActorRef<AnyMessage> {
        if let auth { return auth }
        let resolved = try context.system.actor(AuthActor.self)
        auth = resolved
        return resolved
    }
}

/// An API actor with per-type handlers: answers a path with its member number.
struct APIActor: HandlerActor {
    var member = -1

    mutating func setup(_ on: inout MessageHandlers<APIActor>) {
        on.result(String.self) { api, path, _ in "GET \(path) via api-\(api.member)" }
    }
}

/// Counts how often a closure ran (thread-safe).
final class CallCount: Sendable {
    private let count = Atomic<Int>(0)
    func hit() { count.add(1, ordering: .sequentiallyConsistent) }
    var value: Int { count.load(ordering: .sequentiallyConsistent) }
}

/// Expects `body` to throw an error of type `E` matching `matches`, and returns it.
@discardableResult
func expectError<E: Error, T>(
    _ errorType: E.Type,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T,
    matches: (E) -> Bool = { _ in true }
) -> E? {
    do {
        let value = try body()
        Issue.record("expected \(E.self), got the value \(value)", sourceLocation: sourceLocation)
        return nil
    } catch let error as E {
        #expect(matches(error), "unexpected \(E.self): \(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(E.self), got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
