import Troupe
import TroupeTestSupport

// The session example of Troupe.docc/BuildingSystems.md: a session singleton that logs in
// through an auth actor and keeps sessions in a store it resolves from the service locator.

/// The store behind sessions: a service, not an actor.
protocol SessionProvider: Sendable {
    func user(for token: String) -> String?
}

final class SessionStore: SessionProvider, Sendable {
    private let sessions = TestLock<[String: String]>([:])

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

/// The session actor: logs in through the auth actor (a future reaction) and keeps the
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
