import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// A linked-in plugin that registers actors and every runtime hook.
private struct MonitoringPlugin: TroupePlugin {
    let events: Recorder<String>
    var name = "monitoring"
    var apiVersion = PluginAPI.version

    var descriptor: PluginDescriptor { PluginDescriptor(name: name, version: "2.1.0", apiVersion: apiVersion) }

    func register(into registrar: ActorRegistrar) throws {
        try registrar.singleton(name: "monitored") { PoolWorker(index: 0) }
        let events = events
        registrar.hooks.onActorStarted { events.append("started \($0.name ?? "?")") }
        registrar.hooks.onActorStopped { events.append("stopped \($0.name ?? "?")") }
        registrar.hooks.onActorFailed { failure, directive in
            events.append("failed \(failure.actor.name ?? "?") \(directive)")
        }
        registrar.hooks.onDeadLetter { letter in events.append("dead letter to \(letter.recipient.name ?? "?")") }
    }
}

/// A plugin that registers one actor, then fails.
private struct BrokenPlugin: TroupePlugin {
    struct Broken: Error {}
    var descriptor: PluginDescriptor { PluginDescriptor(name: "broken", version: "0.1") }

    func register(into registrar: ActorRegistrar) throws {
        try registrar.singleton(name: "half") { Counter() }
        throw Broken()
    }
}

@Suite struct PluginTests {
    @Test func pluginHooksSeeStartedStoppedFailedAndDeadLetters() async throws {
        let events = Recorder<String>()
        try await withBuiltSystem({ builder in try builder.plugin(MonitoringPlugin(events: events)) }) { system in
            let monitored = try system.actor(named: "monitored", accepting: PoolWorker.Message.self)
            await waitUntil("started") { events.values.contains("started monitored") }
            monitored.tell(.fail)
            await waitUntil("failed and stopped") { events.values.contains("stopped monitored") }
            monitored.tell(.job(1))
            await waitUntil("dead letter") { events.values.contains("dead letter to monitored") }
            #expect(events.values.contains("failed monitored stop"))
            #expect(system.installedPlugins.map(\.name) == ["monitoring"])
            #expect(system.registeredActors.first?.plugin == "monitoring")
        }
    }

    @Test func systemHooksOfferStartedAndDeadLetterObservers() async throws {
        try await withTestSystem { system in
            let started = Recorder<ActorAddress>()
            let dead = Recorder<DeadLetter>()
            system.hooks.onActorStarted { started.append($0) }
            system.hooks.onDeadLetter { dead.append($0) }
            let counter = system.spawn(Counter(), options: SpawnOptions(name: "watched"))
            await waitUntil("started hook") { started.count == 1 }
            #expect(started.values.first == counter.address)
            counter.stop()
            await waitUntil("stopped") { counter.isStopped }
            counter.tell(.add(1))
            #expect(dead.count == 1)
            #expect(dead.values.first?.reason == .recipientStopped)
            #expect(dead.values.first?.recipient == counter.address)
        }
    }

    @Test func installingAPluginTwiceIsRefused() async throws {
        let events = Recorder<String>()
        try await withTestSystem { system in
            try system.install(MonitoringPlugin(events: events))
            let error = expectError(RegistryError.self, { try system.install(MonitoringPlugin(events: events)) }) {
                if case .pluginAlreadyInstalled("monitoring") = $0 { true } else { false }
            }
            #expect(error?.description.contains("once") == true)
            #expect(system.registeredActors.count == 1)
        }
        let builder = SystemBuilder()
        try builder.plugin(MonitoringPlugin(events: events))
        expectError(RegistryError.self, { try builder.plugin(MonitoringPlugin(events: events)) }) {
            if case .pluginAlreadyInstalled("monitoring") = $0 { true } else { false }
        }
    }

    @Test func aPluginForAnotherAPIVersionIsRefused() async throws {
        try await withTestSystem { system in
            let plugin = MonitoringPlugin(events: Recorder(), apiVersion: PluginAPI.version + 1)
            let error = expectError(RegistryError.self, { try system.install(plugin) }) {
                if case .pluginAPIMismatch("monitoring", PluginAPI.version + 1, PluginAPI.version) = $0 {
                    true
                } else {
                    false
                }
            }
            #expect(error?.description.contains("rebuild the plugin") == true)
            #expect(system.registeredActors.isEmpty)
        }
    }

    @Test func aFailingPluginRegistersNothing() async throws {
        try await withTestSystem { system in
            let error = expectError(RegistryError.self, { try system.install(BrokenPlugin()) }) {
                if case .pluginRegistrationFailed("broken", let underlying) = $0 {
                    underlying is BrokenPlugin.Broken
                } else {
                    false
                }
            }
            #expect(error != nil)
            #expect(system.registeredActors.isEmpty)
            #expect(system.installedPlugins.isEmpty)
        }
    }

    @Test func aPluginNameCollisionNamesThePlugin() async throws {
        let events = Recorder<String>()
        let builder = SystemBuilder()
        try builder.plugin(MonitoringPlugin(events: events))
        let error = expectError(RegistryError.self, { try builder.singleton(name: "monitored") { Counter() } }) {
            if case .duplicateName("monitored", "PoolWorker", "monitoring") = $0 { true } else { false }
        }
        #expect(error?.description.contains("by plugin 'monitoring'") == true)
    }
}

/// The session example of Troupe.docc/BuildingSystems.md, end to end: a session singleton, a
/// pool of three API actors, an auth actor from a factory, a service locator holding a session
/// store, `ask` for a login.
@Suite struct SessionExampleTests {
    @Test func theSessionExampleLogsIn() async throws {
        let store = SessionStore()
        let services = ServiceLocator()
        try services.register(store)
        try services.register(store, as: (any SessionProvider).self)

        try await withBuiltSystem(
            services: services,
            { builder in
                try builder.pool(
                    size: 3, routing: .firstFreeOrGrow(upTo: 3), of: { APIActor() },
                    configure: { api, index in api.member = index })
                try builder.singleton(SessionActor.init)
                try builder.factory { system in
                    _ = try system.pool(APIActor.self)  // the auth actor would call the API through it
                    return AuthActor(realm: "troupe.dev")
                }
            }
        ) { system in
            let session = try system.actor(SessionActor.self)
            let token: String = try await session.ask(Login(email: "ada@troupe.dev", password: "secret"))
            #expect(token == "token-ada@troupe.dev@troupe.dev")
            let provider = try services.resolve((any SessionProvider).self)
            #expect(provider.user(for: token) == "ada@troupe.dev")

            let refused = await askResult { () async throws -> String in
                try await session.ask(Login(email: "eve@troupe.dev", password: "guess"))
            }
            // Forwarded through the session actor, the auth actor's error arrives wrapped once.
            guard case .failure(.failed(let inner)) = refused else {
                Issue.record("expected the login to fail with the auth actor's error, got \(refused)")
                return
            }
            #expect(inner as? AuthError == .badPassword("eve@troupe.dev"))
            #expect(refused.askError?.rootCause as? AuthError == .badPassword("eve@troupe.dev"))

            let api = try system.pool(APIActor.self)
            let body: String = try await api.ask("/me")
            #expect(body == "GET /me via api-0")
        }
    }
}
