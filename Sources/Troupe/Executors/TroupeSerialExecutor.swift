internal import CTroupe

/// A Swift `SerialExecutor` whose jobs run on an actor system's pinned workers, in the turns
/// of a Troupe cell: give a native Swift `actor` one, and its methods run on Troupe's workers
/// with the same mailbox, batching and stranding bound as a Troupe actor.
///
/// ```swift
/// actor Inventory {
///     private let executor: TroupeSerialExecutor
///     nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
///     init(system: ActorSystem) { executor = system.makeSerialExecutor() }
/// }
/// ```
///
/// Jobs run one at a time and in the order they were enqueued, on whichever worker holds the
/// cell's scheduling right (at most ``ActorSystem/Configuration/batchSize`` per turn, then
/// the worker moves on). `assumeIsolated` and `checkIsolated()` hold only inside one of this
/// executor's jobs. The executor never refuses a job, since a refused job is a task that never
/// resumes: after the system has shut down, its jobs run on a thread the system starts for them
/// (still one at a time, and never inside the code that enqueued them), and the system logs a
/// warning once.
///
/// Thread-safety: every method may be called from any thread.
public final class TroupeSerialExecutor: SerialExecutor {
    let lane: JobLane
    /// The system's task executor. Swift re-enqueues a task at an `await` that stays on this
    /// executor when the current task executor is not the one the task prefers, so a job runs
    /// with the task executor its enqueuer ran with: the system's, when it was enqueued by a
    /// job of the system's task executor or by a job that itself ran with it (a task that
    /// prefers the workers), and none otherwise (a task on Swift's global executor). Held
    /// strongly: the lane refers to it unowned.
    let taskExecutor: TroupeTaskExecutor
    /// `taskExecutor`'s address, compared with the enqueuing thread's current task executor.
    private let taskExecutorIdentity: UInt
    /// `UnownedSerialExecutor(ordinary: self)`, made once: Swift asks an actor for its executor
    /// on every call, and building it there costs a witness-table lookup each time.
    @exclusivity(unchecked)
    nonisolated(unsafe) private var unownedSelf: UnownedSerialExecutor?  // set once, in init, before sharing

    init(system: ActorSystem) {
        lane = JobLane(system: system)
        taskExecutor = system.taskExecutor
        // Safety: identity only: compared with the enqueuing thread's current task executor, never
        // dereferenced; `taskExecutor` holds the object anyway.
        let identity = Unmanaged.passUnretained(taskExecutor).toOpaque()
        taskExecutorIdentity = UInt(bitPattern: identity)
        let unowned = UnownedSerialExecutor(ordinary: self)
        unownedSelf = unowned
        lane.serve(.serial(unowned, task: taskExecutor.asUnownedTaskExecutor(), taskIdentity: identity))
        system.introspector.register(serialLane: lane)
    }

    /// The system's list holds the lane strongly until this forgets it (`Introspector.serialLanes`).
    deinit { lane.system.introspector.forget(serialLane: lane) }

    public func enqueue(_ job: consuming ExecutorJob) {
        let current = UInt(bitPattern: CTroupe_current_task_executor())
        lane.enqueue(UnownedJob(job), withTaskExecutor: current == taskExecutorIdentity)
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        // Safety: `init` sets `unownedSelf` before the executor is shared, and nothing clears it.
        unownedSelf.unsafelyUnwrapped
    }

    /// Whether the calling thread runs one of this executor's jobs.
    public func isIsolatingCurrentContext() -> Bool? {
        lane.isRunningJobOnCurrentThread
    }

    /// Traps unless the calling thread runs one of this executor's jobs.
    public func checkIsolated() {
        requireValidUse(
            lane.isRunningJobOnCurrentThread,
            "not isolated to \(self): this code must run in one of the executor's jobs (on the actor that uses it)")
    }

    /// Jobs this executor has run.
    public var jobsRun: Int { lane.jobsRun }
}

extension TroupeSerialExecutor: CustomStringConvertible {
    public var description: String { "TroupeSerialExecutor(\(lane.address))" }
}
