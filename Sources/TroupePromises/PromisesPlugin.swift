import Synchronization
import Troupe

/// Installs TroupePromises into a system: a pool of ``PromiseWorker`` actors (the system's
/// ``WorkerExecutor``, see `system.promiseExecutor()`) and a ``PromiseMetrics``
/// service counting promise events from installation on.
///
/// ```swift
/// let system = try ActorSystem.build { builder in try builder.plugin(PromisesPlugin()) }
/// promise.map(on: try system.promiseExecutor()) { ... }   // runs on a Troupe worker
/// ```
/// Promises themselves need no installation; without the plugin only the executor and the
/// per-system metrics are missing.
public struct PromisesPlugin: TroupePlugin {
    /// The registered name of the worker pool.
    public static let workerPoolName = "troupe.promises.workers"

    public let workers: Int

    /// `workers`: members of the callback worker pool (at least 1).
    public init(workers: Int = 2) { self.workers = workers }

    public var descriptor: PluginDescriptor { PluginDescriptor(name: "troupe.promises", version: "1.0.0") }

    public func register(into registrar: ActorRegistrar) throws {
        try registrar.pool(size: workers, name: Self.workerPoolName) { _ in PromiseWorker() }
        try registrar.services.register(PromiseMetrics())
    }
}

extension ActorSystem {
    /// The ``WorkerExecutor`` installed by ``PromisesPlugin``: callbacks run on Troupe workers.
    /// Throws `RegistryError` when the plugin is not installed.
    public func promiseExecutor() throws(RegistryError) -> WorkerExecutor {
        WorkerExecutor(pool: try pool(named: PromisesPlugin.workerPoolName, accepting: PromiseJob.self))
    }

    /// The ``PromiseMetrics`` of ``PromisesPlugin``, or `nil` when it is not installed.
    public var promiseMetrics: PromiseMetrics? { services.resolveIfRegistered(PromiseMetrics.self) }
}
