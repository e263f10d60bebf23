import Troupe

/// Where a promise callback registered with `on: executor` runs.
public protocol PromiseExecutor: Sendable {
    /// Runs `job` exactly once, now or later, on a thread of the executor's choosing.
    func execute(_ job: @escaping @Sendable () -> Void)
}

/// Runs each job right away on the calling thread, that is the thread completing the promise.
public struct InlineExecutor: PromiseExecutor {
    public init() {}
    public func execute(_ job: @escaping @Sendable () -> Void) { job() }
}

/// Runs each job as a new unstructured Swift task, on the global concurrent executor.
public struct ConcurrencyExecutor: PromiseExecutor {
    public let priority: TaskPriority?
    public init(priority: TaskPriority? = nil) { self.priority = priority }
    public func execute(_ job: @escaping @Sendable () -> Void) { Task(priority: priority) { job() } }
}

extension PromiseExecutor where Self == InlineExecutor {
    /// The completing thread.
    public static var inline: InlineExecutor { InlineExecutor() }
}

extension PromiseExecutor where Self == ConcurrencyExecutor {
    /// A Swift concurrency task.
    public static var concurrency: ConcurrencyExecutor { ConcurrencyExecutor() }
}

/// A job for a ``PromiseWorker``.
public struct PromiseJob: Sendable {
    public let body: @Sendable () -> Void
    public init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

/// An actor that runs the jobs it receives, one at a time, on a Troupe worker thread.
public struct PromiseWorker: ActorDefinition {
    public init() {}
    public mutating func receive(_ message: PromiseJob, context: ActorContext<PromiseJob>) { message.body() }
}

/// Runs jobs on Troupe worker threads, through a pool of ``PromiseWorker`` actors (round robin;
/// jobs sent to one member run in order). Obtain the plugin's pool with
/// ``Troupe/ActorSystem/promiseExecutor()`` or make one with ``init(system:size:)``.
///
/// A job sent after the pool stopped (system shutdown) cannot reach a worker: it then runs on
/// the calling thread instead, so that the callback still runs. A job already enqueued when its
/// worker stops becomes a dead letter (counted by the system's dead-letter office) and does not run.
public struct WorkerExecutor: PromiseExecutor {
    public let pool: ActorPool<PromiseJob>

    public init(pool: ActorPool<PromiseJob>) { self.pool = pool }

    /// Spawns a pool of `size` ``PromiseWorker``s in `system`.
    public init(system: ActorSystem, size: Int = 2) throws {
        pool = try system.spawnPool(size: size, routing: .roundRobin, name: "promise-workers-\(size)") { _ in PromiseWorker() }
    }

    public func execute(_ job: @escaping @Sendable () -> Void) {
        if !pool.tell(PromiseJob(job)).isEnqueued { job() }
    }
}
