import Synchronization
internal import CTroupe

/// A cell whose messages are Swift jobs: the mailbox, scheduling and batching of a Troupe actor
/// behind a Swift executor. A ``TroupeSerialExecutor`` has one; a ``TroupeTaskExecutor`` has
/// one per shared worker.
///
/// Jobs travel through the liburcu mailbox like messages and run in the cell's turns, at most
/// `batchSize` per turn, on whichever worker holds the cell's scheduling right, so the jobs of
/// one lane never run on two threads at once and run in the order they were enqueued.
///
/// A lane is not on the live-actor list (its executor holds it) and never stops: it accepts
/// jobs for as long as anyone enqueues them, because a refused job would be a task that never
/// resumes. After the system's workers have ended, the scheduler hands a newly scheduled lane
/// to its ``LateRunner`` thread, still one turn at a time.
///
/// Thread-safety: `enqueue` from any thread; `runTurn` only by the holder of the scheduling
/// right. `executor` is set once, before the lane is shared.
final class JobLane: AnyCell, @unchecked Sendable {  // inherits AnyCell's contract; `executor` is immutable after init
    /// What a job of this lane runs on.
    enum Executor {
        /// A serial executor's lane. `task` is the system's task executor, and `taskIdentity`
        /// its object's address: a job enqueued by a job that ran with it runs with it too (see
        /// ``TroupeSerialExecutor``).
        case serial(UnownedSerialExecutor, task: UnownedTaskExecutor, taskIdentity: UnsafeMutableRawPointer)
        /// A task executor's lane; `identity` is the executor object's address.
        case task(UnownedTaskExecutor, identity: UnsafeMutableRawPointer)
    }

    /// A job as it travels through the mailbox, with whether it runs with the system's task
    /// executor as the current one (serial lanes; task lanes always do).
    struct Travelling {
        let job: UnownedJob
        let withTaskExecutor: Bool
    }

    /// The executor this lane serves (unowned: the executor owns the lane, and a job enqueued on
    /// an executor keeps it alive until the job has run, by Swift's contract).
    private(set) var executor: Executor?
    /// Jobs this lane has taken to run (counted per batch, before the batch runs, so that
    /// whoever sees a job's effect also sees it counted).
    var jobsRun: Int { Int(messagesProcessed) }
    /// Whether a job arrived after the system's workers ended (logged once).
    private let warnedAfterTermination = Atomic<Bool>(false)

    init(system: ActorSystem) {
        super.init(system: system, config: nil, parentID: 0)
        lifecycle.store(Lifecycle.jobLane.rawValue, ordering: .releasing)
    }

    /// Completes the lane; called once by its executor's initialiser.
    func serve(_ executor: Executor) { self.executor = executor }

    /// Queues a job and schedules the lane when its mailbox was empty. Any thread.
    @inline(__always)
    func enqueue(_ job: UnownedJob, withTaskExecutor: Bool) {
        let envelope = Envelope.make(
            Travelling(job: job, withTaskExecutor: withTaskExecutor), kind: UInt32(CTroupe_envelope_kind_user),
            askToken: nil)
        push(envelope, reserved: false)
    }

    /// Whether the calling thread is running one of this lane's jobs.
    var isRunningJobOnCurrentThread: Bool {
        // Safety: identity only: the two addresses are compared, never dereferenced.
        CTroupe_current_job_lane() == Unmanaged.passUnretained(self).toOpaque()
    }

    override func runTurn(buffer: UnsafeEnvelopeBuffer, limit: Int, progress: UnsafeTurnProgress) -> Bool {
        guard let executor else { preconditionFailure("a job lane runs before its executor is set") }
        if _slowPath(system.schedulerHasTerminated) { warnOnceAfterTermination() }
        // Safety: identity only: the thread's current-lane slot is compared (`checkIsolated`), never
        // dereferenced, and it is restored before this turn returns.
        let me = Unmanaged.passUnretained(self).toOpaque()
        let outerLane = CTroupe_current_job_lane()
        let outerTaskExecutor = CTroupe_current_task_executor()
        defer {
            CTroupe_set_current_job_lane(outerLane)
            CTroupe_set_current_task_executor(outerTaskExecutor)
        }
        CTroupe_set_current_job_lane(me)
        _ = forEachPoppedEnvelope(buffer: buffer, limit: limit, progress: progress) { buffer, index, _ in
            // Safety: `popEnvelopes` filled the indices below the batch's count with non-nil envelopes; a
            // lane's mailbox only ever gets `Travelling` user envelopes (`enqueue`; a lane gets no system
            // message), each taken once.
            let travelling = Envelope(
                raw: buffer[index].unsafelyUnwrapped.assumingMemoryBound(to: CTroupe_envelope.self)
            ).take(as: Travelling.self)
            switch executor {
            case .serial(let serial, let task, let taskIdentity):
                // Swift re-enqueues a task at an `await` that stays on this executor when
                // the current task executor is not the one the task prefers: run each job
                // with the one its enqueuer ran with (the system's, or none).
                if travelling.withTaskExecutor {
                    CTroupe_set_current_task_executor(taskIdentity)
                    travelling.job.runSynchronously(isolatedTo: serial, taskExecutor: task)
                } else {
                    CTroupe_set_current_task_executor(nil)
                    travelling.job.runSynchronously(on: serial)
                }
            case .task(let task, let identity):
                CTroupe_set_current_task_executor(identity)
                travelling.job.runSynchronously(on: task)
            }
            return true
        }
        return finishTurn()
    }

    override func stopBeforeStarting() {
        preconditionFailure("a job lane is never spawned")
    }

    private func warnOnceAfterTermination() {
        guard !warnedAfterTermination.exchange(true, ordering: .relaxed) else { return }
        system.logger.warning(
            "a Swift job was enqueued on a Troupe executor after the actor system shut down; it runs on the system's late-job thread",
            metadata: ["lane": "\(address)"])
    }
}
