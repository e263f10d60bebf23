#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
internal import CTroupe

/// One worker thread, its run queue and its next-slot.
///
/// Thread-safety: `slotStreak`, `strandWatch` and `batchBuffer` belong to the worker's own
/// thread. `runQueue` is a C queue any thread pushes to; the owner and thieves pop under its
/// try-lock. `slotWord` is exchanged by the owner and compare-exchanged by thieves, only for a
/// cell stranded behind a long turn (`Worker+NextSlot.swift` states that protocol). A cell on
/// a run queue or in the slot is an entry (`Unmanaged<AnyCell>`) that carries a retain only
/// when the actor has stopped (`AnyCell.entryRetained` says why the others need none); the
/// retain belongs to whoever holds the cell's scheduling right. `unretainedTurnCell` belongs
/// to the worker's own thread.
final class Worker: @unchecked Sendable {  // see the thread-safety contract above
    let index: Int
    let runQueue: OpaquePointer
    /// Shared workers steal from each other and park on the scheduler's event count; a
    /// dedicated worker serves one blocking actor and parks on its own.
    let isShared: Bool
    let wakeup: EventCount
    let cpu: Int?
    /// The scheduler, borrowed: it joins its workers before it goes away. Reached through
    /// ``withScheduler(_:)``, which takes no retain (a retain per use had polling workers and
    /// every sender contending on the scheduler's reference count).
    private let schedulerReference: Unmanaged<Scheduler>
    /// The next-slot: the cell scheduled last by this worker's own turns (a retained `AnyCell`
    /// address, 0 when empty), run next without queue traffic, so that request/response between
    /// two actors stays on one core. Stealable once stranded (see `Worker+NextSlot.swift`).
    let slotWord = Atomic<UInt>(0)
    /// Bumped by the owner at the start of every turn: a thief that sees the same slot content
    /// and the same stamp for `strandedGraceNanoseconds` knows the owner is stuck in one turn.
    let turnStamp = Atomic<UInt>(0)
    var slotStreak = 0
    /// The cell whose turn this worker runs from an entry without a retain, if any: when the
    /// actor stops in that turn, ``retainIfRunningUnretained(_:)`` retains it (it is about to
    /// leave the live-actor list, its only holder) and clears this.
    var unretainedTurnCell: UnsafeMutableRawPointer?
    /// What this worker, as a thief, last saw in every other shared worker's slot.
    var strandWatch: [StrandObservation] = []
    let batchBuffer: UnsafeEnvelopeBuffer
    /// Handlers this worker has started (see ``UnsafeTurnProgress``): written by its thread, read by
    /// the stuck-handler watchdog and snapshots.
    let progress = UnsafeTurnProgress.allocate()
    /// The address of the cell whose turns this worker runs now (0: none), published by the
    /// worker's thread (relaxed stores): set as each `runCell` begins, cleared only when the
    /// worker finds no next cell (one store per turn, not two), so between two turns it still
    /// names the last cell for a moment. Read by the watchdog and snapshots as an identity
    /// only: they never dereference it (the cell may be gone by then), but look it up among
    /// the cells they hold (``ActorSystem/describeRunningCell(_:)``).
    let currentCell = Atomic<UInt>(0)
    /// A dedicated worker's actor (set once, before the worker's first turn, by spawn); its own
    /// thread reads it to refuse an `askBlocking` of that actor to itself.
    weak var servedCell: AnyCell?
    /// Direct hand-off (`Worker+HandOff.swift`), all three the worker's own thread's: the cell
    /// whose scheduling right this thread means to take for a turn in place (its address; 0:
    /// none), the entry `Scheduler.schedule` captured for it, and how many turns in place are
    /// running on this thread now. No access spans a call that could reach another one, so the
    /// run-time exclusivity checks are skipped.
    /// Whether asks made on this worker may hand off (``ActorSystem/Configuration/directHandOff``;
    /// shared workers only). Immutable.
    let handsOff: Bool
    @exclusivity(unchecked) var handOffTarget: UInt = 0
    @exclusivity(unchecked) var handOffCaptured: UInt = 0
    @exclusivity(unchecked) var handOffDepth = 0
    /// Turns this worker's thread ran in place for an ask (written by that thread with relaxed
    /// loads and stores, no read-modify-write; read by tests and the bench).
    let handOffTurns = Atomic<UInt>(0)
    /// Where the worker is in its life: started by its owner, asked to exit by any thread
    /// (dedicated workers), marked exited by its own thread as its last act.
    private let lifecycle = AtomicLifecycle<WorkerState>(.created)
    var thread: pthread_t?

    /// Consecutive slot runs before the run queue gets a turn (fairness).
    static let slotStreakLimit = 16
    /// How long an idle worker polls for work before parking: keeps the wake-up latency of
    /// bursty traffic low (a futex wake costs microseconds) at a bounded cost when idle.
    static let spinNanoseconds: Int64 = 20_000
    /// How long a poller stays awake while cells pass through other workers' slots.
    static let maximumSpinNanoseconds: Int64 = 1_000_000

    init(index: Int, scheduler: Scheduler, isShared: Bool, wakeup: EventCount, cpu: Int?, handsOff: Bool = false) {
        self.index = index
        self.handsOff = handsOff && isShared
        self.schedulerReference = Unmanaged.passUnretained(scheduler)
        self.isShared = isShared
        self.wakeup = wakeup
        self.cpu = cpu
        self.runQueue = CTroupe_runqueue_create()!
        self.batchBuffer = .allocate(capacity: scheduler.batchSize)
    }

    /// Runs `body` with the scheduler, without retaining it. Any thread.
    @inline(__always)
    func withScheduler<Result>(_ body: (Scheduler) -> Result) -> Result {
        // Safety: the callers are this worker's thread, which the scheduler joins before it
        // can go (its deinit asserts it terminated), and the scheduler's own methods.
        schedulerReference._withUnsafeGuaranteedRef(body)
    }

    /// Whether this worker is one of `scheduler`'s. Any thread.
    @inline(__always)
    func belongs(to scheduler: Scheduler) -> Bool {
        schedulerReference.toOpaque() == Unmanaged.passUnretained(scheduler).toOpaque()
    }

    deinit {
        let state = lifecycle.load()
        assert(state == .created || state == .exited, "a worker is released \(state): its thread still runs")
        CTroupe_runqueue_destroy(runQueue)
        batchBuffer.deallocate()
        progress.deallocate()
    }

    func start(name: String) {
        lifecycle.advance(to: .running)
        // The thread holds the scheduler (one retain for its whole life; `withScheduler` stays
        // unretained): a system released without `shutdown()` then leaks its parked threads
        // instead of freeing the run queues and counters they still read.
        let scheduler = withScheduler { $0 }
        thread = Threads.start(name: name) { [self] in withExtendedLifetime(scheduler) { run() } }
    }

    func join() {
        if let thread { Threads.join(thread) }
        thread = nil
    }

    /// Queues the entry of a cell whose scheduling right the caller holds, and wakes a
    /// worker. Any thread.
    func push(_ entry: Unmanaged<AnyCell>) {
        Worker.queue(entry, on: runQueue)
        wakeup.notify(all: !isShared)
    }

    /// Puts an entry on a run queue; the entry keeps whatever retain it carries
    /// (`AnyCell.entryRetained`). Any thread that holds the cell's scheduling right.
    static func queue(_ entry: Unmanaged<AnyCell>, on queue: OpaquePointer) {
        entry._withUnsafeGuaranteedRef { CTroupe_runqueue_push(queue, $0.mailbox) }
    }

    /// Called by a cell's turn on this worker's thread when its actor stops, just before the
    /// cell leaves the live-actor list: if this worker runs the cell from an unretained entry,
    /// the list's reference was all that held it, so the turn's runner takes a retain now
    /// (released by `runCell` when the turn is over).
    func retainIfRunningUnretained(_ cell: AnyCell) {
        guard let running = unretainedTurnCell, running == Unmanaged.passUnretained(cell).toOpaque() else { return }
        // Safety: a deliberately unbalanced retain, given back by `runCell`'s `entry.release()`
        // once the turn is over (clearing `unretainedTurnCell` tells it to).
        _ = Unmanaged.passRetained(cell)
        unretainedTurnCell = nil
    }

    /// Dedicated workers: finish once the queue is empty. Any thread.
    func requestExit() {
        // Only a running worker moves: a second request, or one after the exit, changes nothing.
        _ = lifecycle.advance(from: .running, to: .exitRequested)
        wakeup.notify(all: true)
    }

    /// Whether a dedicated worker was asked to exit (or has exited). Any thread.
    var hasExitRequest: Bool { lifecycle.hasReached(.exitRequested) }

    /// Whether the worker's thread has finished. Any thread.
    var hasExited: Bool { lifecycle.is(.exited) }

    // MARK: Worker thread only

    private func run() {
        CTroupe_set_current_worker(Unmanaged.passUnretained(self).toOpaque())
        if let cpu { Threads.pinCurrentThread(to: cpu) }
        // Set when this worker found work while polling, in the re-check right after it stopped
        // polling, or after a wake-up. Senders skip the futex wake-up while a worker polls
        // (Scheduler.notifyIdle), so a worker that takes one cell and leaves others queued
        // passes one wake-up on, and the worker it wakes does the same: a chain that ends when
        // the queues are empty or every worker is awake. Otherwise a cell could wait behind a
        // handler that blocks this worker while another worker sleeps. Both the re-check case
        // and the chain were lost wake-ups found by StressTests.blockingActorsNeverWait….
        var polled = false
        while true {
            if let cell = nextCell() {
                if polled {
                    polled = false
                    if !withScheduler({ $0.allQueuesEmpty() }) { wakeup.notify() }
                }
                runCell(cell)
                continue
            }
            // Idle from here on (the next runCell sets it again).
            currentCell.store(0, ordering: .relaxed)
            if shouldExit() { break }
            switch spinForWork() {
            case .work:
                polled = isShared
                continue
            case .stolen(let cell):
                // A cell stranded in a busy worker's slot: pass wake-ups on as for any find.
                if isShared && !withScheduler({ $0.allQueuesEmpty() }) { wakeup.notify() }
                runCell(cell)
                continue
            case .idle:
                break
            }
            let epoch = wakeup.prepareWait()
            if hasWork() || shouldExit() {
                // Work arrived while this worker was still counted as polling, so its senders
                // may have skipped their wake-ups: pass them on as a poller does.
                wakeup.cancelWait()
                polled = isShared
                continue
            }
            // A cell in another worker's slot was placed while this worker polled, so its
            // placer skipped the wake-up: sleep only briefly, then look whether it is stranded.
            let watches = isShared && withScheduler { $0.anySlotOccupied(besides: self) }
            if watches { withScheduler { $0.setWatching(true) } }
            wakeup.wait(epoch: epoch, timeoutNanoseconds: watches ? Worker.strandBackstopNanoseconds : -1)
            if watches { withScheduler { $0.setWatching(false) } }
            // The wake-up may stand for several that senders skipped (a poller passes on one at
            // a time): pass on again if cells remain once this worker takes one.
            polled = isShared
        }
        CTroupe_set_current_worker(nil)
        lifecycle.advance(to: .exited)
    }

    private func shouldExit() -> Bool {
        guard isSlotEmpty, CTroupe_runqueue_is_empty(runQueue) else { return false }
        if isShared { return withScheduler { $0.isStopping && $0.allQueuesEmpty() } }
        return lifecycle.is(.exitRequested)
    }

    private func nextCell() -> Unmanaged<AnyCell>? {
        if let entry = takeSlotAsOwner() {
            // Fairness only matters when something else waits on this worker.
            if slotStreak < Worker.slotStreakLimit || CTroupe_runqueue_is_empty(runQueue) {
                slotStreak += 1
                return entry
            }
            Worker.queue(entry, on: runQueue)
        }
        slotStreak = 0
        if let cell = Worker.tryPop(runQueue) { return cell }
        guard isShared else { return nil }
        return withScheduler { $0.steal(for: self) }
    }

    /// Takes the oldest entry of a run queue, and with it the cell's scheduling right; nil when the
    /// queue is empty or another thread is popping it (a try-pop: see `CTroupe_runqueue_try_pop`).
    static func tryPop(_ queue: OpaquePointer) -> Unmanaged<AnyCell>? {
        guard let owner = CTroupe_runqueue_try_pop(queue) else { return nil }
        // Safety: a mailbox's owner pointer is the cell that embeds it, alive while the mailbox
        // is queued (see `AnyCell.entryRetained`).
        return Unmanaged<AnyCell>.fromOpaque(owner)
    }

    private func hasWork() -> Bool {
        if !isSlotEmpty || !CTroupe_runqueue_is_empty(runQueue) { return true }
        return isShared && !withScheduler { $0.allQueuesEmpty() }
    }

    enum SpinOutcome {
        /// Own slot, own queue or another queue has a cell.
        case work
        /// A cell taken from another worker's slot, where it was stranded behind a long turn.
        case stolen(Unmanaged<AnyCell>)
        /// Nothing found within the polling window.
        case idle
    }

    private func spinForWork() -> SpinOutcome {
        // Shared workers announce that they poll, so that senders skip the futex wake-up; the
        // decrement comes before the re-check that precedes parking (Scheduler.notifyIdle).
        if isShared { withScheduler { $0.setPolling(true) } }
        defer { if isShared { withScheduler { $0.setPolling(false) } } }
        let start = CTroupe_monotonic_ns()
        var now = start
        var deadline = start + Worker.spinNanoseconds
        var nextSlotLook = start
        repeat {
            if hasWork() { return .work }
            if isShared && now >= nextSlotLook {
                // Paced: the slots' cache lines belong to busy workers.
                nextSlotLook = now + Worker.slotLookIntervalNanoseconds
                switch lookForStrandedCell(now: now) {
                case .stolen(let cell):
                    return .stolen(cell)
                case .occupied:
                    // Traffic flows through a slot: stay awake (up to a limit) to catch a cell
                    // that gets stranded, rather than be woken for every placement.
                    deadline = min(start + Worker.maximumSpinNanoseconds, max(deadline, now + Worker.spinNanoseconds))
                case .empty:
                    break
                }
            }
            for _ in 0..<8 { CTroupe_cpu_relax() }
            now = CTroupe_monotonic_ns()
        } while now < deadline
        return .idle
    }

    /// Runs the turns of a cell taken from an entry (with its scheduling right), then queues
    /// it again when more is pending, or releases the entry's retain.
    private func runCell(_ entry: Unmanaged<AnyCell>) {
        markTurnStarted()
        currentCell.store(UInt(bitPattern: entry.toOpaque()), ordering: .relaxed)
        // Safety: the cell lives through the turn: an entry's retain holds it, or (unretained
        // entry) the live-actor list does until the cell's own turn takes it off, which first
        // retains it (`retainIfRunningUnretained`; `AnyCell.entryRetained` has the argument).
        let releasesEntry = entry._withUnsafeGuaranteedRef { cell -> Bool in
            var retained = cell.entryRetained
            if !retained { unretainedTurnCell = entry.toOpaque() }
            let limit = withScheduler { $0.batchSize }
            var more = cell.runTurn(buffer: batchBuffer, limit: limit, progress: progress)
            // Nothing else waits here: keep going without queue traffic.
            while more && isSlotEmpty && CTroupe_runqueue_is_empty(runQueue) {
                more = cell.runTurn(buffer: batchBuffer, limit: limit, progress: progress)
            }
            if !retained && unretainedTurnCell == nil {
                retained = true  // the actor stopped: retainIfRunningUnretained took one
            }
            unretainedTurnCell = nil
            guard more else { return retained }
            cell.entryRetained = retained
            Worker.queue(entry, on: runQueue)
            if isShared { withScheduler { $0.notifyIdle() } }
            return false
        }
        if releasesEntry { entry.release() }
    }
}

/// A worker's life, in order (``AtomicLifecycle`` checks the moves in debug builds). Shared
/// workers go from running to exited on their own, when the scheduler stops; dedicated workers
/// exit once asked.
enum WorkerState: UInt8, LifecycleState {
    /// Made; no thread yet.
    case created
    /// Its thread runs turns.
    case running
    /// A dedicated worker was asked to finish once its queue is empty.
    case exitRequested
    /// Its thread has returned (it can be joined).
    case exited

    static func allows(from current: Self, to next: Self) -> Bool {
        switch (current, next) {
        case (.created, .running), (.running, .exitRequested), (.running, .exited), (.exitRequested, .exited): true
        default: false
        }
    }
}
