internal import TroupeLocks
import Synchronization
internal import CTroupe

/// Finds handlers that run too long: a timer entry that, every quarter of the threshold, reads
/// each shared worker's current cell and handler counter (``Worker/currentCell``,
/// ``UnsafeTurnProgress``). The same cell with the same count as at an earlier look means one handler
/// has run at least since that look; past the threshold it is reported (hooks, a log warning,
/// ``count``), and reported again once the worker has moved on.
///
/// Costs the hot path nothing beyond the handler counter: it reads the workers' words and
/// never touches an actor's memory except to name one it reports, which it looks up among the
/// cells the system holds.
///
/// Thread-safety: `fire` runs on the system's timer thread; `observations` is locked because
/// snapshots read it from any thread; `count` is an atomic. `system` is written by `start`
/// before the entry is scheduled (the timer's lock publishes it), then only by the timer thread
/// (`fire`) and by `fireAtShutdown`, which the timer calls after joining that thread.
final class StuckHandlerWatchdog: TimerEntry, @unchecked Sendable {  // see the thread-safety contract above
    let thresholdNanoseconds: Int64
    let intervalNanoseconds: Int64
    /// The system, held strongly until the timer stops (shutdown), which breaks the cycle
    /// system → timer → this entry → system: `fireAtShutdown` drops it, and so does a look that
    /// finds the workers ended. Not weak: a weak reference gives the system a side table, and
    /// every retain and release of the system (one each per spawn, several per ask) then takes
    /// the runtime's slow path (~50 instructions each, measured). A system dropped without a
    /// shutdown keeps running its threads either way; this keeps its object too.
    @exclusivity(unchecked) private var system: ActorSystem?
    private let observations = Locked<[Observation]>([])
    /// Handlers reported as running and not yet finished.
    let count = Atomic<Int>(0)

    /// What the watchdog last saw on one worker.
    struct Observation {
        var cell: UInt = 0
        var progress: UInt = 0
        /// When it first saw this cell with this count (monotonic ns).
        var since: Int64 = 0
        /// When it last saw them unchanged.
        var lastSeen: Int64 = 0
        /// Set once reported as stuck: what was reported.
        var report: StuckHandler?
    }

    init(thresholdNanoseconds: Int64) {
        self.thresholdNanoseconds = thresholdNanoseconds
        intervalNanoseconds = min(1_000_000_000, max(10_000_000, thresholdNanoseconds / 4))
    }

    /// Starts watching `system`'s shared workers. Once, by the system's initialiser.
    func start(watching system: ActorSystem) {
        self.system = system
        observations.withLock { $0 = Array(repeating: Observation(), count: system.scheduler.sharedWorkers.count) }
        system.timer.schedule(self, atNanoseconds: CTroupe_monotonic_ns() + intervalNanoseconds)
    }

    /// How long the handler `worker` runs now has run at least, if the watchdog has seen it
    /// (same cell, same count) at two looks. Any thread.
    func runningTime(worker: Int, cell: UInt, progress: UInt) -> Duration? {
        observations.withLock { all in
            guard worker < all.count else { return nil }
            let seen = all[worker]
            guard seen.cell == cell, seen.progress == progress, cell != 0 else { return nil }
            return .nanoseconds(seen.lastSeen - seen.since)
        }
    }

    override func fire() {
        guard let system else { return }
        if system.schedulerHasTerminated {
            self.system = nil
            return
        }
        let now = CTroupe_monotonic_ns()
        let workers = system.scheduler.sharedWorkers
        var finished: [StuckHandler] = []
        var suspects: [(worker: Int, cell: UInt, progress: UInt, elapsed: Int64)] = []
        observations.withLock { all in
            for index in all.indices {
                // Safety: `system`, held strongly here, holds the scheduler, which holds its shared workers.
                let (cell, progress) = workers[index]._withUnsafeGuaranteedRef {
                    ($0.currentCell.load(ordering: .relaxed), $0.progress.handlersStarted)
                }
                var seen = all[index]
                if cell != 0 && cell == seen.cell && progress == seen.progress {
                    seen.lastSeen = now
                    if seen.report == nil && now - seen.since >= thresholdNanoseconds {
                        suspects.append((index, cell, progress, now - seen.since))
                    }
                } else {
                    if let report = seen.report {
                        // It started after the look before `since` and ended after `lastSeen`,
                        // before now: now - since is within one step of how long it ran.
                        finished.append(report.finishing(after: now - seen.since))
                    }
                    seen = Observation(cell: cell, progress: progress, since: now, lastSeen: now)
                }
                all[index] = seen
            }
        }
        for report in finished {
            count.subtract(1, ordering: .relaxed)
            system.stuckHandlerFinished(report)
        }
        for suspect in suspects {
            guard let running = system.describeRunningCell(suspect.cell) else { continue }
            let report = StuckHandler(
                phase: .running, actor: running.address, isSwiftJob: running.isSwiftJob,
                messageType: running.messageType, worker: suspect.worker, elapsed: .nanoseconds(suspect.elapsed))
            // Still the same handler? (It may have ended while the cell was looked up.)
            let confirmed = observations.withLock { all in
                // Safety: `system`, held strongly here, holds the scheduler, which holds its shared workers.
                let (cell, progress) = workers[suspect.worker]._withUnsafeGuaranteedRef {
                    ($0.currentCell.load(ordering: .relaxed), $0.progress.handlersStarted)
                }
                guard cell == suspect.cell, progress == suspect.progress, all[suspect.worker].cell == cell,
                    all[suspect.worker].progress == progress
                else { return false }
                all[suspect.worker].report = report
                return true
            }
            guard confirmed else { continue }
            count.add(1, ordering: .relaxed)
            system.stuckHandlerFound(report)
        }
        system.timer.schedule(self, atNanoseconds: now + intervalNanoseconds)
    }

    /// The timer stopped (the system shut down): nothing to watch any more.
    override func fireAtShutdown() { system = nil }
}

extension StuckHandler {
    /// The report that the handler reported as running has ended.
    func finishing(after elapsed: Int64) -> StuckHandler {
        StuckHandler(
            phase: .finished, actor: actor, isSwiftJob: isSwiftJob, messageType: messageType, worker: worker,
            elapsed: .nanoseconds(max(elapsed, self.elapsed.nanoseconds)))
    }
}
