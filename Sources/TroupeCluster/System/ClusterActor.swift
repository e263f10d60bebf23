import Distributed
import Troupe

/// A distributed actor of a ``ClusterSystem`` that runs on Troupe: conform to it and the
/// actor's executor is a Troupe cell of the cluster's actor system (its methods run on
/// Troupe's pinned workers, with Troupe's mailbox and batching), with nothing else to write.
///
/// ```swift
/// distributed actor Greeter: ClusterActor {
///     distributed func greet(_ name: String) -> String { "Hello, \(name)!" }
/// }
/// ```
///
/// A distributed actor of a `ClusterSystem` that does not conform runs on Swift's default
/// executor instead; everything else works the same.
public protocol ClusterActor: DistributedActor where ActorSystem == ClusterSystem {}

extension ClusterActor {
    /// The actor's own `TroupeSerialExecutor`, made when its id was assigned.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        // A remote reference never runs isolated code here; the shared fallback only keeps the
        // requirement total.
        (id.executor ?? actorSystem.fallbackExecutor).asUnownedSerialExecutor()
    }
}
