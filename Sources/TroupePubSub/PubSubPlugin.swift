import Troupe

/// Installs a ``PubSub`` broker into a system as a service, through the plugin registry:
///
/// ```swift
/// let system = try ActorSystem.build { builder in try builder.plugin(PubSubPlugin()) }
/// let pubsub = try system.pubSub()              // or, in a handler: try context.service(PubSub.self)
/// ```
///
/// The broker is registered under ``PubSub`` in the system's `ServiceLocator` and its
/// stop observer among the plugin's hooks, so it learns of every actor that stops. It binds to
/// the system of its first subscriber.
public struct PubSubPlugin: TroupePlugin {
    public init() {}

    public var descriptor: PluginDescriptor { PluginDescriptor(name: "troupe.pubsub", version: "1.0.0") }

    public func register(into registrar: ActorRegistrar) throws {
        let core = PubSubCore(system: nil)
        let broker = PubSub(unboundCore: core)
        try registrar.services.register(broker)
        registrar.hooks.onActorStopped { [weak core] address in core?.actorStopped(address) }
    }
}

extension ActorSystem {
    /// The broker installed by ``PubSubPlugin``; fails with
    /// `ServiceError.notRegistered(type:registered:)` when the plugin is not installed.
    public func pubSub() throws(ServiceError) -> PubSub {
        try services.resolve(PubSub.self)
    }
}

extension ActorContext {
    /// The broker installed by ``PubSubPlugin``, from inside a handler.
    public func pubSub() throws(ServiceError) -> PubSub {
        try services.resolve(PubSub.self)
    }
}
