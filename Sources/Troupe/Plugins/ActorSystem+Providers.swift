internal import TroupeLocks
#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif
import Synchronization

extension ActorSystem {
    /// The actor registered for `type` (created now if it is a singleton or factory not yet
    /// accessed). Fails with ``RegistryError``: unknown type, registered under several names,
    /// registered as a pool.
    public func actor<Actor: SpawnableActor>(
        _ type: Actor.Type
    ) throws(RegistryError) -> ActorRef<Actor.Definition.Message> {
        let entry = try providers.entry(ofType: type)
        return try providers.resolve(
            entry, pool: false, accepting: Actor.Definition.Message.self,
            as: ActorRef<Actor.Definition.Message>.self, in: self)
    }

    /// The actor registered as `name`, which must accept `Message` (`AnyMessage` for actors
    /// with per-type handlers): how a host reaches actors of a loaded plugin, whose types it
    /// does not know.
    public func actor<Message: Sendable>(
        named name: String, accepting message: Message.Type = Message.self
    ) throws(RegistryError) -> ActorRef<Message> {
        let entry = try providers.entry(named: name)
        return try providers.resolve(entry, pool: false, accepting: message, as: ActorRef<Message>.self, in: self)
    }

    /// The pool registered for `type`.
    public func pool<Actor: SpawnableActor>(
        _ type: Actor.Type
    ) throws(RegistryError) -> ActorPool<Actor.Definition.Message> {
        let entry = try providers.entry(ofType: type)
        return try providers.resolve(
            entry, pool: true, accepting: Actor.Definition.Message.self,
            as: ActorPool<Actor.Definition.Message>.self, in: self)
    }

    /// The pool registered as `name`, whose members accept `Message`.
    public func pool<Message: Sendable>(
        named name: String, accepting message: Message.Type = Message.self
    ) throws(RegistryError) -> ActorPool<Message> {
        let entry = try providers.entry(named: name)
        return try providers.resolve(entry, pool: true, accepting: message, as: ActorPool<Message>.self, in: self)
    }

    /// Every registered actor and pool, by name.
    public var registeredActors: [RegisteredActor] { providers.registered }

    /// Every installed plugin (linked in or loaded), by name.
    public var installedPlugins: [PluginDescriptor] { providers.plugins }

    /// Registers more actors (and hooks, services) into the running system: all of them or,
    /// when one fails, none.
    ///
    /// ```swift
    /// try system.register { registrar in try registrar.singleton(AuditActor.init) }
    /// ```
    public func register(_ body: (ActorRegistrar) throws -> Void) throws {
        let registrar = ActorRegistrar(services: services)
        try body(registrar)
        try providers.commit(registrar, into: self)
    }

    /// Installs a plugin linked into the program. Fails with ``RegistryError``: API version
    /// mismatch, already installed, a registration of the plugin failed, a name is taken.
    public func install(_ plugin: some TroupePlugin) throws(RegistryError) {
        let name = plugin.descriptor.name
        // Checked before the plugin registers anything (services included).
        guard !providers.isInstalled(plugin: name) else { throw .pluginAlreadyInstalled(name) }
        let registrar = ActorRegistrar(services: services)
        try registrar.install(plugin)
        try providers.commit(registrar, into: self)
    }
}
