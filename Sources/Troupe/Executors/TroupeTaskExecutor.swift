import Synchronization

/// A Swift `TaskExecutor` that runs tasks on an actor system's pinned workers: use
/// ``ActorSystem/taskExecutor`` with `Task(executorPreference:)` or
/// `withTaskExecutorPreference`. ``ActorContext/run(_:then:)`` uses it, so async work started by
/// a handler stays on the workers.
///
/// It has one lane (a Troupe cell) per shared worker. A job enqueued on a worker goes to that
/// worker's lane, which the worker runs right after its current turn: a task awaiting an ask
/// is resumed by the replying worker without a futex wake-up or a thread switch. A job
/// enqueued from any other thread goes to the lanes round robin. A lane's jobs run one at a
/// time, at most ``ActorSystem/Configuration/batchSize`` per turn, and an idle worker can take
/// a whole lane from a busy one, not a single job: a job that blocks holds up the jobs queued
/// behind it in its lane (use a dedicated thread for blocking work).
///
/// After the system has shut down, jobs run on a thread the system starts for them (never inside
/// the code that enqueued them; the system logs a warning once); none is dropped.
///
/// Thread-safety: every method may be called from any thread.
public final class TroupeTaskExecutor: TaskExecutor {
    let lanes: [JobLane]
    /// The lanes and the system, borrowed on every enqueue rather than retained (a retain per
    /// job would contend with every other thread touching their reference counts). `lanes`
    /// holds the lanes; every lane holds the system.
    private let laneRefs: [Unmanaged<JobLane>]
    private let system: Unmanaged<ActorSystem>
    private let nextLane = Atomic<Int>(0)

    init(system: ActorSystem, laneCount: Int) {
        // Safety (the three unretained references): `lanes` holds every lane and every lane holds the
        // system for this executor's life; `identity` is only compared with a thread's current executor.
        self.system = Unmanaged.passUnretained(system)
        lanes = (0..<laneCount).map { _ in JobLane(system: system) }
        laneRefs = lanes.map { Unmanaged.passUnretained($0) }
        let identity = Unmanaged.passUnretained(self).toOpaque()
        for lane in lanes { lane.serve(.task(UnownedTaskExecutor(ordinary: self), identity: identity)) }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        // Safety: `lanes` holds every lane and every lane holds the system, for as long as this
        // executor lives; a task that prefers the executor holds it while it enqueues.
        let index =
            system._withUnsafeGuaranteedRef { $0.currentSharedWorkerIndex() }
            ?? Int(
                bitPattern: UInt(bitPattern: nextLane.wrappingAdd(1, ordering: .relaxed).oldValue)
                    % UInt(laneRefs.count))
        let unowned = UnownedJob(job)
        laneRefs[index]._withUnsafeGuaranteedRef { $0.enqueue(unowned, withTaskExecutor: true) }
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Jobs this executor has run.
    public var jobsRun: Int { lanes.reduce(0) { $0 + $1.jobsRun } }
}
