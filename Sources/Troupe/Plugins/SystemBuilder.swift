/// Builds an actor system from plugins and providers: register, then ``build()``.
///
/// ```swift
/// let services = ServiceLocator()
/// try services.register(SessionStore())
///
/// let system = try ActorSystem.build(services: services) { builder in
///     try builder.pool(size: 3) { _ in APIActor() }                       // a pool of three
///     try builder.singleton(SessionActor.init)                           // created on first access
///     try builder.factory { system in AuthActor(api: try system.pool(APIActor.self)) }
///     try builder.plugin(MetricsPlugin())
/// }
/// let session = try system.actor(SessionActor.self)
/// ```
///
/// Registration errors are thrown by the registering call itself (a duplicate name, an invalid
/// pool), so they point at the line that caused them.
///
/// Thread-safety: not `Sendable`; build on one thread.
public final class SystemBuilder: ActorRegistrar {
    /// The configuration the system is built with; its ``ActorSystem/Configuration/services``
    /// is ``ActorRegistrar/services``.
    public let configuration: ActorSystem.Configuration
    private var built = false

    public init(configuration: ActorSystem.Configuration = ActorSystem.Configuration()) {
        self.configuration = configuration
        super.init(services: configuration.services)
    }

    /// A builder whose system uses `services` (replacing the configuration's).
    public convenience init(
        configuration: ActorSystem.Configuration = ActorSystem.Configuration(), services: ServiceLocator
    ) {
        var configuration = configuration
        configuration.services = services
        self.init(configuration: configuration)
    }

    /// Installs a plugin linked into the program: it registers its actors, services and hooks
    /// into this builder. Fails with ``RegistryError``: API version mismatch, already installed,
    /// one of its registrations failed.
    public func plugin(_ plugin: some TroupePlugin) throws(RegistryError) {
        try install(plugin)
    }

    /// Loads a plugin library now and registers its actors into this builder; see
    /// ``ActorSystem/loadPlugin(at:)``.
    @discardableResult
    public func loadPlugin(at path: String) throws(PluginLoadError) -> PluginDescriptor {
        try loadPlugin(at: path) { _, _ in nil }.descriptor
    }

    /// Starts the system, registers everything, and spawns the `instance` providers. A builder
    /// builds one system; a second call fails with ``RegistryError/builderAlreadyBuilt``.
    public func build() throws(RegistryError) -> ActorSystem {
        guard !built else { throw .builderAlreadyBuilt }
        built = true
        let system = ActorSystem(configuration: configuration)
        // Names were checked as they were registered and the system's provider table is empty, so
        // this cannot fail; should it, the half-built system must not keep its threads.
        do throws(RegistryError) {
            try system.providers.commit(self, into: system)
        } catch {
            system.shutdownBlocking()
            throw error
        }
        return system
    }
}

extension ActorSystem {
    /// Builds a system: `body` registers providers and plugins on a ``SystemBuilder``.
    public static func build(
        configuration: Configuration = Configuration(),
        _ body: (SystemBuilder) throws -> Void
    ) throws -> ActorSystem {
        let builder = SystemBuilder(configuration: configuration)
        try body(builder)
        return try builder.build()
    }

    /// Builds a system whose actors resolve services from `services`.
    public static func build(
        configuration: Configuration = Configuration(),
        services: ServiceLocator,
        _ body: (SystemBuilder) throws -> Void
    ) throws -> ActorSystem {
        let builder = SystemBuilder(configuration: configuration, services: services)
        try body(builder)
        return try builder.build()
    }
}
