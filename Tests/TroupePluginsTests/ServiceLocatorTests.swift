import Testing
import Troupe
import TroupeTestSupport

/// Services by concrete type and by protocol, resolved by actors from their context.
@Suite struct ServiceLocatorTests {
    @Test func servicesResolveByConcreteTypeAndByProtocol() throws {
        let store = SessionStore()
        let services = ServiceLocator()
        try services.register(store)
        try services.register(store, as: (any SessionProvider).self)
        #expect(try services.resolve(SessionStore.self) === store)
        let provider = try services.resolve((any SessionProvider).self)
        #expect(provider as? SessionStore === store)
        #expect(services.contains((any SessionProvider).self))
        #expect(services.registeredTypes.count == 2)
    }

    @Test func aMissingServiceIsATypedErrorNamingTheType() throws {
        let services = ServiceLocator()
        try services.register(SessionStore())
        let error = expectError(ServiceError.self, { try services.resolve((any SessionProvider).self) }) {
            if case .notRegistered(let type, let registered) = $0 {
                type.contains("SessionProvider") && registered.count == 1 && registered[0].hasSuffix("SessionStore")
            } else {
                false
            }
        }
        #expect(error?.description.contains("SessionProvider") == true)
        #expect(error?.description.contains("services.register") == true)
        #expect(services.resolveIfRegistered(Counter.self) == nil)
    }

    @Test func registeringATypeTwiceIsAnErrorReplacingIsNot() throws {
        let services = ServiceLocator()
        let first = SessionStore()
        try services.register(first)
        let error = expectError(ServiceError.self, { try services.register(SessionStore()) }) {
            if case .alreadyRegistered(let type) = $0 { type.hasSuffix("SessionStore") } else { false }
        }
        #expect(error?.description.contains("replace") == true)
        #expect(try services.resolve(SessionStore.self) === first)
        let second = SessionStore()
        services.replace(second)
        #expect(try services.resolve(SessionStore.self) === second)
        #expect(services.remove(SessionStore.self))
        #expect(!services.contains(SessionStore.self))
    }

    @Test func actorsResolveServicesFromTheirContext() async throws {
        let store = SessionStore()
        let services = ServiceLocator()
        try services.register(store)
        try await withBuiltSystem(
            services: services,
            { builder in
                try builder.singleton { AuthActor(realm: "example.org") }
                try builder.singleton { SessionActor() }
            }
        ) { system in
            #expect(system.services === services)
            let session = try system.actor(SessionActor.self)
            let token: String = try await session.ask(Login(email: "ada@example.org", password: "secret"))
            #expect(token == "token-ada@example.org@example.org")
            #expect(store.user(for: token) == "ada@example.org")
            session.tell(Logout())
            let user: String = try await session.ask(CurrentUser())
            #expect(user == "nobody")
            #expect(store.count == 0)
        }
    }

    @Test func anActorMissingAServiceFailsWithTheTypedError() async throws {
        try await withBuiltSystem({ builder in
            try builder.singleton { AuthActor(realm: "r") }
            try builder.singleton { SessionActor() }
        }) { system in
            let session = try system.actor(SessionActor.self)
            // Logout's void handler resolves the store, which nobody registered.
            let result = await askResult { () async throws -> Void in
                try await session.ask(Logout(), returning: Void.self)
            }
            guard case .failure(.failed(let error)) = result, let missing = error as? ServiceError,
                case .notRegistered(let type, _) = missing
            else {
                Issue.record("expected the handler to fail with ServiceError.notRegistered, got \(result)")
                return
            }
            #expect(type.hasSuffix("SessionStore"))
        }
    }

    @Test func builderServicesAreTheSystemsAndTakeRegistrationsDuringTheBuild() async throws {
        let builder = SystemBuilder(configuration: .init(workerCount: 1, pinWorkers: false, logger: quietLogger))
        try builder.services.register(SessionStore())
        let system = try builder.build()
        #expect(system.services === builder.services)
        #expect(system.services.contains(SessionStore.self))
        await system.shutdown()
    }
}
