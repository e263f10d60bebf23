import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Builds a test system (2 unpinned workers, quiet logger) from a builder body, runs `test`,
/// and shuts the system down, also when the test throws.
func withBuiltSystem(
    workers: Int = 2,
    services: ServiceLocator = ServiceLocator(),
    askTimeout: Duration = .seconds(30),
    failureDecider: @escaping FailureDecider = { _ in .stop },
    _ register: (SystemBuilder) throws -> Void,
    test: (ActorSystem) async throws -> Void
) async throws {
    let configuration = ActorSystem.Configuration(
        name: "plugins-test", workerCount: workers, pinWorkers: false, askTimeout: askTimeout,
        failureDecider: failureDecider, logger: quietLogger, services: services)
    let system = try ActorSystem.build(configuration: configuration, register)
    do {
        try await test(system)
    } catch {
        await system.shutdown()
        throw error
    }
    await system.shutdown()
}

/// The builder's providers and lookups by type and by name.
@Suite struct ProviderTests {
    @Test func singletonIsCreatedOnFirstAccessOnlyAndOnce() async throws {
        let made = AtomicCounter()
        try await withBuiltSystem({ builder in
            try builder.singleton {
                made.increment(); return Counter()
            }
        }) { system in
            #expect(made.value == 0)
            #expect(system.liveActorCount == 0)
            let first = try system.actor(Counter.self)
            let second = try system.actor(Counter.self)
            #expect(first == second)
            #expect(made.value == 1)
            first.tell(.add(5))
            #expect(try await second.ask { .get($0) } == 5)
            #expect(first.address.name == "Counter")
        }
    }

    @Test func concurrentFirstAccessCreatesTheSingletonOnce() async throws {
        let made = AtomicCounter()
        try await withBuiltSystem({ builder in
            try builder.singleton(name: "shared") {
                made.increment(); return Counter()
            }
        }) { system in
            let refs = Recorder<ActorRef<Counter.Message>>()
            await TestThreads.run(count: 8) { _ in
                if let ref = try? system.actor(named: "shared", accepting: Counter.Message.self) { refs.append(ref) }
            }
            #expect(refs.count == 8)
            #expect(Set(refs.values).count == 1)
            #expect(made.value == 1)
        }
    }

    @Test func instanceIsSpawnedWhenTheSystemIsBuiltWithItsState() async throws {
        let started = Recorder<ActorAddress>()
        try await withBuiltSystem({ builder in
            builder.hooks.onActorStarted { started.append($0) }
            try builder.instance(Counter(total: 41), name: "preset")
        }) { system in
            await waitUntil("instance started") { started.count == 1 }
            #expect(started.values.first?.name == "preset")
            let counter = try system.actor(named: "preset", accepting: Counter.Message.self)
            counter.tell(.add(1))
            #expect(try await counter.ask { .get($0) } == 42)
            #expect(try system.actor(Counter.self) == counter)
        }
    }

    @Test func factoryIsGivenTheSystemAndResolvesOtherActors() async throws {
        try await withBuiltSystem({ builder in
            try builder.singleton { AuthActor(realm: "example.org") }
            try builder.factory(name: "front") { system in
                // Resolved through the system the factory is given.
                _ = try system.actor(AuthActor.self)
                return Counter(total: 7)
            }
        }) { system in
            let front = try system.actor(named: "front", accepting: Counter.Message.self)
            #expect(try await front.ask { .get($0) } == 7)
            let auth = try system.actor(AuthActor.self)
            let token: String = try await auth.ask(Login(email: "ada", password: "secret"))
            #expect(token == "token-ada@example.org")
        }
    }

    /// A handler actor whose `setup` registers a type twice is a thrown error where the API
    /// can throw: at registration for an instance, at lookup for a singleton or a factory.
    @Test func aDuplicateHandlerIsAThrownErrorAtRegistrationOrLookup() async throws {
        struct Twice: HandlerActor {
            struct Ping: Sendable {}
            func setup(_ on: inout MessageHandlers<Twice>) {
                on.void(Ping.self) { _, _, _ in }
                on.result(Ping.self) { _, _, _ in 1 }
            }
        }
        let expected = HandlerSetupError.duplicateHandlers(actor: "Twice", messageTypes: ["Ping"])
        try await withBuiltSystem({ builder in
            let atRegistration = expectError(RegistryError.self, { try builder.instance(Twice(), name: "now") }) {
                if case .creationFailed("now", let underlying) = $0 {
                    return underlying as? HandlerSetupError == expected
                }
                return false
            }
            // Says what failed, not "the factory threw" (an instance has no factory).
            #expect(atRegistration?.description.hasPrefix("creating 'now' failed: Twice.setup registers") == true)
            try builder.singleton(name: "single") { Twice() }
            try builder.factory(name: "made") { _ in Twice() }
        }) { system in
            for name in ["single", "made"] {
                let error = expectError(
                    RegistryError.self, { try system.actor(named: name, accepting: AnyMessage.self) }
                ) {
                    if case .creationFailed(name, let underlying) = $0 {
                        return underlying as? HandlerSetupError == expected
                    }
                    return false
                }
                #expect(error?.description.contains("register exactly one handler per message type") == true)
            }
        }
    }

    @Test func factoryErrorFailsTheLookupAndTheNextLookupRetries() async throws {
        let attempts = AtomicCounter()
        struct NotYet: Error {}
        try await withBuiltSystem({ builder in
            try builder.factory(name: "flaky") { _ in
                attempts.increment()
                if attempts.value == 1 { throw NotYet() }
                return Counter(total: 3)
            }
        }) { system in
            let error = expectError(
                RegistryError.self, { try system.actor(named: "flaky", accepting: Counter.Message.self) }
            ) {
                if case .creationFailed(let name, let underlying) = $0 {
                    return name == "flaky" && underlying is NotYet
                }
                return false
            }
            #expect(error?.description.contains("the next lookup tries again") == true)
            let counter = try system.actor(named: "flaky", accepting: Counter.Message.self)
            #expect(try await counter.ask { .get($0) } == 3)
            #expect(attempts.value == 2)
        }
    }

    @Test func factoryRestartsTheActorWithAFreshInstance() async throws {
        let made = AtomicCounter()
        try await withBuiltSystem(
            failureDecider: { _ in .restart },
            { builder in
                try builder.factory(name: "worker") { _ in
                    made.increment(); return PoolWorker(index: made.value)
                }
            }
        ) { system in
            let worker = try system.actor(named: "worker", accepting: PoolWorker.Message.self)
            #expect(try await worker.ask { .whoAmI($0) } == 1)
            worker.tell(.fail)
            #expect(try await worker.ask { .whoAmI($0) } == 2)
            #expect(made.value == 2)
        }
    }

    @Test func poolProviderGivesAPoolOfThreeAPIActors() async throws {
        try await withBuiltSystem({ builder in
            try builder.pool(size: 3, of: { APIActor() }, configure: { api, index in api.member = index })
        }) { system in
            let api = try system.pool(APIActor.self)
            #expect(api.size == 3)
            #expect(api.name == "APIActor")
            var answers: Set<String> = []
            for _ in 0..<3 { answers.insert(try await api.ask("/users", returning: String.self)) }
            #expect(answers == ["GET /users via api-0", "GET /users via api-1", "GET /users via api-2"])
            #expect(try system.pool(APIActor.self) === api)
            #expect(try system.pool(named: "APIActor", accepting: AnyMessage.self) === api)
        }
    }

    @Test func handlerActorsRegisterAsEveryKindOfProvider() async throws {
        try await withBuiltSystem({ builder in
            try builder.singleton(name: "s") { APIActor(member: 1) }
            try builder.instance(APIActor(member: 2), name: "i")
            try builder.factory(name: "f") { _ in APIActor(member: 3) }
            try builder.pool(size: 2, name: "p") { APIActor(member: 10 + $0) }
        }) { system in
            for (name, member) in [("s", 1), ("i", 2), ("f", 3)] {
                let ref = try system.actor(named: name, accepting: AnyMessage.self)
                #expect(try await ref.ask("/", returning: String.self) == "GET / via api-\(member)")
            }
            let pool = try system.pool(named: "p", accepting: AnyMessage.self)
            #expect(pool.size == 2)
            #expect(system.registeredActors.map(\.name) == ["f", "i", "p", "s"])
            #expect(system.registeredActors.map(\.kind) == [.factory, .instance, .pool, .singleton])
        }
    }

    @Test func runningSystemsAcceptRegistrationsAllOrNothing() async throws {
        try await withBuiltSystem({ try $0.singleton(name: "taken") { Counter() } }) { system in
            try system.register { registrar in try registrar.singleton(name: "late") { Counter(total: 9) } }
            #expect(try await system.actor(named: "late", accepting: Counter.Message.self).ask { .get($0) } == 9)

            expectError(
                RegistryError.self,
                {
                    try system.register { registrar in
                        try registrar.singleton(name: "fresh") { Counter() }
                        try registrar.singleton(name: "taken") { Counter() }
                    }
                }
            ) { if case .duplicateName("taken", _, _) = $0 { true } else { false } }
            // "fresh" came with the failing batch: it was not added.
            expectError(RegistryError.self, { try system.actor(named: "fresh", accepting: Counter.Message.self) }) {
                if case .unknownName("fresh", _) = $0 { true } else { false }
            }
        }
    }
}

/// Every bad input of the builder and of the lookups (`RegistryError`), and what its message
/// advises.
@Suite struct RegistryErrorTests {
    @Test func unknownNameListsWhatIsRegistered() async throws {
        try await withBuiltSystem({ try $0.singleton(name: "known") { Counter() } }) { system in
            let error = expectError(
                RegistryError.self, { try system.actor(named: "unknown", accepting: Counter.Message.self) }
            ) {
                if case .unknownName("unknown", let registered) = $0 { registered == ["known"] } else { false }
            }
            #expect(error?.description.contains("register it with") == true)
            #expect(error?.description.contains("known") == true)
        }
    }

    @Test func unknownTypeSaysHowToRegisterIt() async throws {
        try await withBuiltSystem({ _ in }) { system in
            let error = expectError(RegistryError.self, { try system.actor(Counter.self) }) {
                if case .unknownType("Counter", _) = $0 { true } else { false }
            }
            #expect(error?.description.contains("builder.singleton(Counter.init)") == true)
        }
    }

    @Test func aTypeUnderTwoNamesIsAmbiguousByType() async throws {
        try await withBuiltSystem({ builder in
            try builder.singleton(name: "primary") { Counter() }
            try builder.singleton(name: "replica") { Counter() }
        }) { system in
            let error = expectError(RegistryError.self, { try system.actor(Counter.self) }) {
                if case .ambiguousType("Counter", let names) = $0 { names == ["primary", "replica"] } else { false }
            }
            #expect(error?.description.contains("system.actor(named:)") == true)
            _ = try system.actor(named: "replica", accepting: Counter.Message.self)
        }
    }

    @Test func duplicateNamesAreRefusedAtTheRegisteringLine() throws {
        let builder = SystemBuilder()
        try builder.singleton { Counter() }
        let error = expectError(RegistryError.self, { try builder.pool(size: 2, name: "Counter") { _ in Counter() } }) {
            if case .duplicateName("Counter", "Counter", nil) = $0 { true } else { false }
        }
        #expect(error?.description.contains("another name") == true)
        expectError(RegistryError.self, { try builder.singleton(name: "") { Counter() } }) {
            if case .emptyName = $0 { true } else { false }
        }
    }

    @Test func lookingUpWithTheWrongMessageTypeNamesTheRightOne() async throws {
        try await withBuiltSystem({ try $0.singleton(name: "counter") { Counter() } }) { system in
            let error = expectError(RegistryError.self, { try system.actor(named: "counter", accepting: String.self) })
            {
                if case .messageTypeMismatch("counter", let accepts, "Swift.String") = $0 {
                    accepts.hasSuffix("Counter.Message")
                } else {
                    false
                }
            }
            #expect(error?.description.contains("accepting:") == true)
        }
    }

    @Test func aPoolIsNotASingleActorAndTheOtherWayRound() async throws {
        try await withBuiltSystem({ builder in
            try builder.pool(size: 2, name: "workers") { PoolWorker(index: $0) }
            try builder.singleton(name: "one") { PoolWorker(index: 0) }
        }) { system in
            let asActor = expectError(RegistryError.self, { try system.actor(PoolWorker.self) }) {
                if case .ambiguousType = $0 { true } else { false }
            }
            #expect(asActor != nil)
            let poolAsActor = expectError(
                RegistryError.self, { try system.actor(named: "workers", accepting: PoolWorker.Message.self) }
            ) {
                if case .wrongProvider("workers", .pool, .singleton) = $0 { true } else { false }
            }
            #expect(poolAsActor?.description.contains("system.pool(") == true)
            let actorAsPool = expectError(
                RegistryError.self, { try system.pool(named: "one", accepting: PoolWorker.Message.self) }
            ) {
                if case .wrongProvider("one", .singleton, .pool) = $0 { true } else { false }
            }
            #expect(actorAsPool?.description.contains("system.actor(") == true)
        }
    }

    @Test func invalidPoolsAreRefusedWhenRegistered() throws {
        let builder = SystemBuilder()
        let empty = expectError(RegistryError.self, { try builder.pool(size: 0) { PoolWorker(index: $0) } }) {
            if case .invalidPool("PoolWorker", .invalidSize(0)) = $0 { true } else { false }
        }
        #expect(empty?.description.contains("size: 1") == true)
        expectError(
            RegistryError.self,
            {
                try builder.pool(size: 3, routing: .firstFreeOrGrow(upTo: 2), name: "grow") { PoolWorker(index: $0) }
            }
        ) { if case .invalidPool("grow", .invalidMaximum(size: 3, maximum: 2)) = $0 { true } else { false } }
    }

    @Test func factoriesThatNeedThemselvesReportTheCycle() async throws {
        try await withBuiltSystem({ builder in
            try builder.factory(name: "a") { system in
                _ = try system.actor(named: "b", accepting: Counter.Message.self)
                return Counter()
            }
            try builder.factory(name: "b") { system in
                _ = try system.actor(named: "a", accepting: Counter.Message.self)
                return Counter()
            }
        }) { system in
            let error = expectError(
                RegistryError.self, { try system.actor(named: "a", accepting: Counter.Message.self) }
            ) {
                if case .creationCycle("a") = $0 { true } else { false }
            }
            #expect(error?.description.contains("cycle") == true)
            #expect(system.liveActorCount == 0)
        }
    }

    @Test func aBuilderBuildsOneSystem() async throws {
        let builder = SystemBuilder(configuration: .init(workerCount: 1, pinWorkers: false, logger: quietLogger))
        let system = try builder.build()
        let error = expectError(RegistryError.self, { try builder.build() }) {
            if case .builderAlreadyBuilt = $0 { true } else { false }
        }
        #expect(error?.description.contains("new builder") == true)
        await system.shutdown()
    }

    @Test func lookupsAfterShutdownSayTheSystemIsGone() async throws {
        let configuration = ActorSystem.Configuration(workerCount: 1, pinWorkers: false, logger: quietLogger)
        let system = try ActorSystem.build(configuration: configuration) { try $0.singleton { Counter() } }
        let counter = try system.actor(Counter.self)
        await system.shutdown()
        #expect(counter.isStopped)
        expectError(RegistryError.self, { try system.actor(Counter.self) }) {
            if case .systemShutDown = $0 { true } else { false }
        }
    }

    @Test func systemsBuiltWithProvidersAreReleasedAfterShutdown() async throws {
        weak var released: ActorSystem?
        do {
            let configuration = ActorSystem.Configuration(workerCount: 1, pinWorkers: false, logger: quietLogger)
            let system = try ActorSystem.build(configuration: configuration) { builder in
                try builder.singleton { Counter() }
                try builder.pool(size: 2) { PoolWorker(index: $0) }
            }
            _ = try system.actor(Counter.self)
            _ = try system.pool(PoolWorker.self)
            released = system
            await system.shutdown()
        }
        // The provider table held refs and pools, which hold the system; shutdown let go of them.
        await waitUntil("system released") { released == nil }
    }
}
