internal import TroupeLocks
import Synchronization

/// Collects actor registrations (providers), runtime hooks and services: what a
/// ``SystemBuilder`` and a ``TroupePlugin`` register into. Registrations take effect together
/// when the system is built or the plugin installed.
///
/// Providers:
/// - ``singleton(name:options:_:)``: one actor, created on first access;
/// - ``instance(_:name:options:)``: one actor from an already initialised value, spawned when
///   the system is built (or the plugin installed);
/// - ``factory(name:options:_:)``: one actor, created on first access by a closure given the
///   system (to look up other actors and services);
/// - ``pool(size:routing:name:options:member:)``: an ``ActorPool`` of one definition, created
///   on first access.
///
/// Each registration has a name, by default the definition's type name; look actors up by
/// type (`system.actor(SessionActor.self)`) or by name (``ActorSystem/actor(named:accepting:)``).
///
/// Thread-safety: not `Sendable`; use a registrar on one thread (the builder's or the
/// installing thread). The closures it stores are `@Sendable`: they run later, on whichever
/// thread first looks the actor up, or on a worker when a member restarts.
public class ActorRegistrar {
    /// The services of the system being built (or running): register services here too.
    public let services: ServiceLocator
    /// Runtime hooks to add to the system.
    public let hooks = PluginHooks()

    private(set) var providers: [ProviderEntry] = []
    private var providerNames: [String: ProviderEntry] = [:]
    /// Plugins installed through this registrar, by name.
    private(set) var plugins: [String: PluginDescriptor] = [:]
    /// Libraries loaded through this registrar: real path → plugin name.
    var libraries: [String: String] = [:]
    /// The plugin whose `register(into:)` is running, to attribute its registrations.
    private var currentPlugin: String?

    init(services: ServiceLocator) {
        self.services = services
    }

    // MARK: Singleton

    /// Registers one actor created on first access by `make` (which also makes the fresh
    /// instance of a restart): `try builder.singleton(SessionActor.init)`.
    @discardableResult
    public func singleton<Actor: SpawnableActor>(
        name: String? = nil,
        options: SpawnOptions = .default,
        _ make: @escaping @Sendable () -> Actor
    ) throws(RegistryError) -> String {
        try add(Actor.self, accepting: Actor.Definition.Message.self, kind: .singleton, name: name) { name in
            { system in
                // A misused `setup` is a creation error for the looker-up, not a trap.
                let restart = Self.restartFactory(
                    name: name, system: system, first: try Actor._runnable(make()),
                    make: { _ in Actor.runnable(make()) })
                return system.spawnRef(options: Self.named(options, name), factory: restart)
            }
        }
    }

    // MARK: Instance

    /// Registers an already initialised actor: spawned when the system is built (or the
    /// registering plugin installed). It has no factory, so a failure cannot restart it; use
    /// ``singleton(name:options:_:)`` for actors that should restart.
    @discardableResult
    public func instance<Actor: SpawnableActor>(
        _ actor: sending Actor,
        name: String? = nil,
        options: SpawnOptions = .default
    ) throws(RegistryError) -> String {
        // Made runnable now: a misused `setup` is an error of this registration.
        let runnable: Actor.Definition
        do { runnable = try Actor._runnable(actor) } catch {
            throw .creationFailed(name: name ?? Self.typeName(Actor.self), error: error)
        }
        let held = Locked<Actor.Definition?>(runnable)
        return try add(Actor.self, accepting: Actor.Definition.Message.self, kind: .instance, name: name) { name in
            { system in
                // The provider table creates each entry once, so the value is still there.
                guard let runnable = held.withLock({ $0.take() }) else {
                    fatalError("instance '\(name)' spawned twice (internal error)")
                }
                return system.spawnRef(runnable, factory: nil, options: Self.named(options, name), parent: nil)
            }
        }
    }

    // MARK: Factory

    /// Registers one actor created on first access by `make(system)`, which can look up the
    /// actors and services it needs:
    ///
    /// ```swift
    /// try builder.factory { system in
    ///     AuthActor(api: try system.pool(APIActor.self), sessions: try system.services.resolve(SessionStore.self))
    /// }
    /// ```
    /// An error thrown on first access fails that lookup with
    /// ``RegistryError/creationFailed(name:error:)`` and the next lookup tries again. `make` runs
    /// again for each restart; it must not throw then (the process traps with the error, as
    /// there is no caller to hand it to).
    @discardableResult
    public func factory<Actor: SpawnableActor>(
        name: String? = nil,
        options: SpawnOptions = .default,
        _ make: @escaping @Sendable (ActorSystem) throws -> Actor
    ) throws(RegistryError) -> String {
        try add(Actor.self, accepting: Actor.Definition.Message.self, kind: .factory, name: name) { name in
            { system in
                let restart = Self.restartFactory(
                    name: name, system: system, first: try Actor._runnable(try make(system)),
                    make: { Actor.runnable(try make($0)) })
                return system.spawnRef(options: Self.named(options, name), factory: restart)
            }
        }
    }

    /// Returns `first` on its first call (so that an error of the first `make` reached the
    /// looker-up), then a fresh `make(system)` per restart.
    private static func restartFactory<Made>(
        name: String, system: ActorSystem, first: sending Made,
        make: @escaping @Sendable (ActorSystem) throws -> Made
    ) -> @Sendable () -> Made {
        let pending = Locked<Made?>(first)
        return {
            if let made = pending.withLock({ $0.take() }) { return made }
            do {
                return try make(system)
            } catch {
                fatalError(
                    "the factory of '\(name)' threw while restarting the actor: \(error); a factory may only fail on first access"
                )
            }
        }
    }

    // MARK: Pool

    /// Registers a pool of `size` members made by `member(index)`, created on first access:
    /// `try builder.pool(size: 3) { _ in APIActor() }`. Invalid sizes fail here with
    /// ``RegistryError/invalidPool(name:_:)``.
    @discardableResult
    public func pool<Actor: SpawnableActor>(
        size: Int,
        routing: PoolRouting<Actor.Definition.Message> = .roundRobin,
        name: String? = nil,
        options: SpawnOptions = .default,
        member: @escaping @Sendable (Int) -> Actor
    ) throws(RegistryError) -> String {
        do { try routing.validate(size: size) } catch {
            throw .invalidPool(name: name ?? Self.typeName(Actor.self), error)
        }
        return try add(Actor.self, accepting: Actor.Definition.Message.self, kind: .pool, name: name) { name in
            { system in try system.spawnPool(size: size, routing: routing, name: name, options: options, member: member)
            }
        }
    }

    /// Registers a pool whose members start from `make()` and are then set up by
    /// `configure(&member, index)`.
    @discardableResult
    public func pool<Actor: SpawnableActor>(
        size: Int,
        routing: PoolRouting<Actor.Definition.Message> = .roundRobin,
        name: String? = nil,
        options: SpawnOptions = .default,
        of make: @escaping @Sendable () -> Actor,
        configure: @escaping @Sendable (inout Actor, Int) -> Void
    ) throws(RegistryError) -> String {
        try pool(size: size, routing: routing, name: name, options: options, member: configuredMember(make, configure))
    }

    // MARK: Plugins

    /// Installs a plugin: checks its API version and name, then lets it register.
    func install(_ plugin: some TroupePlugin) throws(RegistryError) {
        let descriptor = plugin.descriptor
        guard descriptor.apiVersion == PluginAPI.version else {
            throw .pluginAPIMismatch(
                plugin: descriptor.name, pluginAPI: descriptor.apiVersion, runtimeAPI: PluginAPI.version)
        }
        guard plugins[descriptor.name] == nil else { throw .pluginAlreadyInstalled(descriptor.name) }
        let outer = currentPlugin
        currentPlugin = descriptor.name
        defer { currentPlugin = outer }
        do {
            try plugin.register(into: self)
        } catch {
            throw .pluginRegistrationFailed(plugin: descriptor.name, error: error)
        }
        plugins[descriptor.name] = descriptor
    }

    // MARK: Internals

    /// Adds one provider. `make(name)` builds the creation closure once the name is settled.
    private func add<Key, Message: Sendable>(
        _ type: Key.Type, accepting message: Message.Type, kind: ProviderKind, name: String?,
        make: (String) -> @Sendable (ActorSystem) throws -> any Sendable
    ) throws(RegistryError) -> String {
        let name = name ?? Self.typeName(type)
        guard !name.isEmpty else { throw .emptyName }
        if let existing = providerNames[name] {
            throw .duplicateName(name, existingType: existing.typeName, plugin: existing.plugin)
        }
        let entry = ProviderEntry(
            name: name, typeID: ObjectIdentifier(type), typeName: Self.typeName(type),
            messageTypeID: ObjectIdentifier(message), messageTypeName: String(reflecting: message),
            kind: kind, plugin: currentPlugin, make: make(name))
        providers.append(entry)
        providerNames[name] = entry
        return name
    }

    static func typeName<T>(_ type: T.Type) -> String { String(describing: type) }

    /// `options` with the registered name, unless it names the actor already.
    private static func named(_ options: SpawnOptions, _ name: String) -> SpawnOptions {
        var named = options
        if named.name == nil { named.name = name }
        return named
    }
}

/// Runtime hooks a plugin (or builder) adds to the system: the same events as ``SystemHooks``,
/// installed together with the plugin's actors.
///
/// Thread-safety: registered on the registrar's thread; the observers are `@Sendable` and run
/// as ``SystemHooks`` describes (synchronously, on the thread where the event happens).
public final class PluginHooks {
    private var started: [@Sendable (ActorAddress) -> Void] = []
    private var stopped: [@Sendable (ActorAddress) -> Void] = []
    private var failed: [@Sendable (ActorFailure, FailureDirective) -> Void] = []
    private var restarted: [@Sendable (ActorAddress, any Error) -> Void] = []
    private var deadLetters: [@Sendable (DeadLetter) -> Void] = []

    init() {}

    /// See ``SystemHooks/onActorStarted(_:)``.
    public func onActorStarted(_ observer: @escaping @Sendable (ActorAddress) -> Void) { started.append(observer) }
    /// See ``SystemHooks/onActorStopped(_:)``.
    public func onActorStopped(_ observer: @escaping @Sendable (ActorAddress) -> Void) { stopped.append(observer) }
    /// See ``SystemHooks/onActorFailed(_:)``.
    public func onActorFailed(_ observer: @escaping @Sendable (ActorFailure, FailureDirective) -> Void) {
        failed.append(observer)
    }
    /// See ``SystemHooks/onActorRestarted(_:)``.
    public func onActorRestarted(_ observer: @escaping @Sendable (ActorAddress, any Error) -> Void) {
        restarted.append(observer)
    }
    /// See ``SystemHooks/onDeadLetter(_:)``.
    public func onDeadLetter(_ observer: @escaping @Sendable (DeadLetter) -> Void) { deadLetters.append(observer) }

    func install(into hooks: SystemHooks) {
        for observer in started { hooks.onActorStarted(observer) }
        for observer in stopped { hooks.onActorStopped(observer) }
        for observer in failed { hooks.onActorFailed(observer) }
        for observer in restarted { hooks.onActorRestarted(observer) }
        for observer in deadLetters { hooks.onDeadLetter(observer) }
    }
}
