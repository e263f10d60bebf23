// Oscar's session system on Troupe: an actor system assembled by a builder (a singleton session
// actor, a pool of API actors, an auth actor made by a factory), a service locator holding a
// session store that is not an actor, and per-type handlers with the three reactions (void,
// result, future). Then the mistakes a user meets: an actor type nobody registered, and a
// message type no handler accepts.

import Synchronization
import ExampleSupport
import Troupe

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// MARK: Messages

/// Asks the session actor to sign in; answered (later) with a session token.
struct Login: Sendable {
    let email: String
    let password: String
}

/// Asks who is signed in; answered at once.
struct CurrentUser: Sendable {}

/// Signs out; nothing to answer.
struct Logout: Sendable {}

/// A message the session actor has no handler for.
struct ChangePassword: Sendable { let newPassword: String }

/// Asks the auth actor to check credentials; answered with a token.
struct Authenticate: Sendable {
    let email: String
    let password: String
}

/// What the API actors serve: a sign-in call, or the status of one connection.
enum APICall: Sendable {
    case signIn(email: String, password: String)
    case status
}

/// The auth actor's answer to a login, brought back to the session actor as one of its own
/// messages, with the asker's reply slot.
struct AuthAnswered: Sendable {
    let email: String
    let outcome: Result<String, AskError>
    let reply: Reply<String>
}

struct InvalidCredentials: Error, CustomStringConvertible {
    let email: String
    var description: String { "invalid credentials for \(email)" }
}

// MARK: A service that is not an actor

/// What a screen needs to know about the session, without knowing the store behind it.
protocol SessionProvider: Sendable {
    var currentToken: String? { get }
}

/// The session store: thread-safe, shared by every actor that resolves it.
final class SessionStore: SessionProvider {
    private let state = Mutex<(user: String?, token: String?)>((nil, nil))

    func save(token: String, for user: String) { state.withLock { $0 = (user, token) } }
    func clear() { state.withLock { $0 = (nil, nil) } }
    var currentToken: String? { state.withLock { $0.token } }
    var currentUser: String? { state.withLock { $0.user } }
}

// MARK: Actors

/// One connection to the (simulated) backend. A pool of them serves calls in parallel.
struct APIActor: HandlerActor {
    var connection = -1

    func setup(_ on: inout MessageHandlers<APIActor>) {
        // result reaction that may fail: a failure answers the asker without failing the actor.
        on.result(APICall.self) { api, call, _ -> Result<String, any Error> in
            switch call {
            case .signIn(let email, let password):
                guard password == "open sesame" else { return .failure(InvalidCredentials(email: email)) }
                return .success("token-\(email)")
            case .status:
                return .success("api-\(api.connection) up")
            }
        }
    }
}

/// Checks credentials through one member of the API pool.
struct AuthActor: HandlerActor {
    let api: ActorPool<AnyMessage>

    func setup(_ on: inout MessageHandlers<AuthActor>) {
        // future reaction: the answer comes from another actor, later.
        on.future(Authenticate.self, replying: String.self) { auth, request, _, reply in
            auth.api.ask(APICall.signIn(email: request.email, password: request.password), returning: String.self) {
                result in
                // An AskError passes through unchanged, so the first asker sees the root error.
                reply.complete { try result.get() }
            }
        }
    }
}

/// The session: who is signed in. It keeps no token itself; the store does.
struct SessionActor: HandlerActor {
    var user: String?
    var auth: ActorRef<AnyMessage>?

    func setup(_ on: inout MessageHandlers<SessionActor>) {
        // future: redirect the login to the auth actor and answer once it has answered.
        on.future(Login.self, replying: String.self) { session, login, context, reply in
            // Looked up on first use, then kept (a lookup takes the registry's lock).
            let auth = try session.auth ?? context.system.actor(AuthActor.self)
            session.auth = auth
            let email = login.email
            context.ask(auth, Authenticate(email: login.email, password: login.password), returning: String.self) {
                outcome in
                AnyMessage(AuthAnswered(email: email, outcome: outcome, reply: reply))
            }
        }
        // void: the auth actor's answer, handled on the session actor (so it may change its state).
        on.void(AuthAnswered.self) { session, answer, context in
            switch answer.outcome {
            case .success(let token):
                try context.service(SessionStore.self).save(token: token, for: answer.email)
                session.user = answer.email
                answer.reply.succeed(token)
            case .failure(let error):
                answer.reply.fail(error)
            }
        }
        // result: answer at once.
        on.result(CurrentUser.self) { session, _, _ in session.user ?? "nobody" }
        // void: do the work, answer nothing.
        on.void(Logout.self) { session, _, context in
            try context.service(SessionStore.self).clear()
            session.user = nil
        }
    }
}

/// An actor type that is never registered.
struct PaymentActor: HandlerActor {
    func setup(_ on: inout MessageHandlers<PaymentActor>) {}
}

// MARK: Checks

// MARK: The program

@main
struct OscarSessions {
    static func main() async throws {
        step("Assembling the actor system")
        let store = SessionStore()
        let services = ServiceLocator()
        try services.register(store)  // by its class
        try services.register(store, as: (any SessionProvider).self)  // and by protocol
        let system = try ActorSystem.build(services: services) { builder in
            try builder.pool(
                size: 3, routing: .firstFreeOrGrow(upTo: 3), of: { APIActor() },
                configure: { api, index in api.connection = index })
            try builder.singleton(SessionActor.init)
            try builder.factory { system in AuthActor(api: try system.pool(APIActor.self)) }
        }
        let registered = system.registeredActors.map { "\($0)" }.sorted()
        print("registered: \(registered.joined(separator: "; "))")
        check(registered.count == 3, "three providers are registered (got \(registered))")
        check(system.liveActorCount == 0, "nothing is created before it is first looked up")

        let dead = Lines()
        system.deadLetters.observe { dead.append("\($0)") }

        step("Login: a future reaction, answered once the auth actor answered")
        let session = try system.actor(SessionActor.self)
        print("looked up the session actor: \(session.address)")
        let token: String = try await session.ask(Login(email: "ada@example.org", password: "open sesame"))
        print("login answered with token '\(token)'")
        check(token == "token-ada@example.org", "login returns the API's token (got \(token))")
        let provider = try system.services.resolve((any SessionProvider).self)
        print("the store, resolved by its protocol, holds token \(provider.currentToken ?? "nil")")
        check(provider.currentToken == token, "the session actor saved the token in the store")

        step("Current user: a result reaction")
        let user: String = try await session.ask(CurrentUser())
        print("current user: \(user)")
        check(user == "ada@example.org", "the session knows who signed in (got \(user))")

        step("A wrong password: the API's error reaches the first asker, through two actors")
        do {
            let _: String = try await session.ask(Login(email: "eve@example.org", password: "guess"))
            fail("a wrong password must not sign in")
        } catch {
            print("login failed: \(error)")
            check(error.rootCause is InvalidCredentials, "the root cause is the API's error (got \(error))")
        }
        let stillUser: String = try await session.ask(CurrentUser())
        check(stillUser == "ada@example.org", "a failed login leaves the session as it was (got \(stillUser))")
        print("the session actor goes on; still signed in: \(stillUser)")

        step("The API pool: three connections, each answering")
        let api = try system.pool(APIActor.self)
        let statuses = await api.askAll(APICall.status, returning: String.self)
        let lines = statuses.map { (try? $0.get()) ?? "error" }
        print("askAll: \(lines)")
        check(lines == ["api-0 up", "api-1 up", "api-2 up"], "every pool member answers with its connection")

        step("Logout: a void reaction (a tell, fire and forget)")
        let outcome = session.tell(Logout())
        print("tell(Logout()) -> \(outcome)")
        let afterLogout: String = try await session.ask(CurrentUser())
        print("current user after logout: \(afterLogout); token in the store: \(store.currentToken ?? "none")")
        check(afterLogout == "nobody", "logout clears the user (got \(afterLogout))")
        check(store.currentToken == nil && store.currentUser == nil, "logout clears the session store")

        step("Mistake 1: asking for an actor type that was never registered")
        do {
            _ = try system.actor(PaymentActor.self)
            fail("an unregistered type must not resolve")
        } catch {
            // `system.actor` throws a typed RegistryError: no cast needed.
            print("RegistryError: \(error)")
            guard case .unknownType(let type, _) = error else {
                fail("expected RegistryError.unknownType, got \(error)")
            }
            check(type == "PaymentActor", "the error names the missing type")
        }
        do {
            _ = try system.actor(APIActor.self)
            fail("a pool is not a single actor")
        } catch {
            print("RegistryError: \(error)")
            guard case .wrongProvider = error else {
                fail("expected RegistryError.wrongProvider, got \(error)")
            }
        }

        step("Mistake 2: a message type without a handler")
        let told = session.tell(ChangePassword(newPassword: "x"))
        print("tell(ChangePassword) -> \(told) (the handler table is checked when it is handled)")
        do {
            let _: Bool = try await session.ask(ChangePassword(newPassword: "y"))
            fail("an unhandled type must not be answered")
        } catch {
            print("ask(ChangePassword) failed at once: \(error)")
            guard case .undeliverable(.unhandledMessageType(let type)) = error else {
                fail("expected AskError.undeliverable(.unhandledMessageType), got \(error)")
            }
            check(type.hasSuffix("ChangePassword"), "the dead letter names the type (got \(type))")
        }
        let unhandled = system.deadLetters.count(.unhandledMessageType)
        print("dead letters for unhandled types: \(unhandled)")
        for letter in dead.all { print("  observed: \(letter)") }
        check(unhandled == 2, "both the tell and the ask became dead letters (got \(unhandled))")
        check(dead.all.count == 2, "the observer saw both dead letters (got \(dead.all.count))")

        await system.shutdown()
        print("\noscar-sessions: all checks passed")
    }
}
