import Troupe

/// Runs jobs on Troupe worker threads, through a pool of ``PromiseWorker`` actors (round robin;
/// jobs sent to one member run in order). Obtain the plugin's pool with
/// `system.promiseExecutor()` or make one with ``init(system:size:)``.
///
/// A job sent after the pool stopped (system shutdown) cannot reach a worker: it then runs on
/// the calling thread instead, so that the callback still runs. A job already enqueued when its
/// worker stops becomes a dead letter (counted by the system's dead-letter office) and does not run.
public struct WorkerExecutor: PromiseExecutor {
    public let pool: ActorPool<PromiseJob>

    public init(pool: ActorPool<PromiseJob>) { self.pool = pool }

    /// Spawns a pool of `size` ``PromiseWorker``s in `system`.
    public init(system: ActorSystem, size: Int = 2) throws {
        pool = try system.spawnPool(size: size, routing: .roundRobin, name: "promise-workers-\(size)") { _ in
            PromiseWorker()
        }
    }

    public func execute(_ job: @escaping @Sendable () -> Void) {
        if !pool.tell(PromiseJob(job)).isEnqueued { job() }
    }
}
