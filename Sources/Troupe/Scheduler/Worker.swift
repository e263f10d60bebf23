#if canImport(Glibc)
import Glibc
#endif
import Synchronization
internal import CTroupe

/// One worker thread and its run queue.
///
/// Thread-safety: `slot`, `slotStreak` and `batchBuffer` belong to the worker's own thread.
/// `runQueue` is a C queue any thread pushes to; the owner and thieves pop under its try-lock.
/// Every cell on a run queue or in the slot carries one retain, owned by whoever holds the
/// cell's scheduling right.
final class Worker: @unchecked Sendable {  // see the thread-safety contract above
    let index: Int
    let runQueue: OpaquePointer
    /// Shared workers steal from each other and park on the scheduler's event count; a
    /// dedicated worker serves one blocking actor and parks on its own.
    let isShared: Bool
    let wakeup: EventCount
    let cpu: Int?
    unowned(unsafe) let scheduler: Scheduler  // the scheduler joins its workers before it goes away
    /// The cell scheduled last by this worker's own turns: run next, without queue traffic
    /// (request/response between two actors stays on one core).
    var slot: AnyCell?
    var slotStreak = 0
    let batchBuffer: UnsafeMutablePointer<UnsafeMutablePointer<CTroupe_envelope>?>
    let exitRequested = Atomic<Bool>(false)
    let exited = Atomic<Bool>(false)
    var thread: pthread_t?

    /// Consecutive slot runs before the run queue gets a turn (fairness).
    static let slotStreakLimit = 16
    /// How long an idle worker polls for work before parking: keeps the wake-up latency of
    /// bursty traffic low (a futex wake costs microseconds) at a bounded cost when idle.
    static let spinNanoseconds: Int64 = 20_000

    init(index: Int, scheduler: Scheduler, isShared: Bool, wakeup: EventCount, cpu: Int?) {
        self.index = index
        self.scheduler = scheduler
        self.isShared = isShared
        self.wakeup = wakeup
        self.cpu = cpu
        self.runQueue = CTroupe_runqueue_create()!
        self.batchBuffer = .allocate(capacity: scheduler.batchSize)
    }

    deinit {
        CTroupe_runqueue_destroy(runQueue)
        batchBuffer.deallocate()
    }

    func start(name: String) {
        thread = Threads.start(name: name) { [self] in run() }
    }

    func join() {
        if let thread { Threads.join(thread) }
        thread = nil
    }

    /// Queues a cell whose scheduling right the caller holds (with its retain). Any thread.
    func push(_ cell: AnyCell) {
        Worker.queue(cell, on: runQueue)
        wakeup.notify(all: !isShared)
    }

    /// Dedicated workers: finish once the queue is empty. Any thread.
    func requestExit() {
        exitRequested.store(true, ordering: .sequentiallyConsistent)
        wakeup.notify(all: true)
    }

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
                    if !scheduler.allQueuesEmpty() { wakeup.notify() }
                }
                runCell(cell)
                continue
            }
            if shouldExit() { break }
            if spinForWork() {
                polled = isShared
                continue
            }
            let epoch = wakeup.prepareWait()
            if hasWork() || shouldExit() {
                // Work arrived while this worker was still counted as polling, so its senders
                // may have skipped their wake-ups: pass them on as a poller does.
                wakeup.cancelWait()
                polled = isShared
                continue
            }
            wakeup.wait(epoch: epoch)
            // The wake-up may stand for several that senders skipped (a poller passes on one at
            // a time): pass on again if cells remain once this worker takes one.
            polled = isShared
        }
        CTroupe_set_current_worker(nil)
        exited.store(true, ordering: .releasing)
    }

    private func shouldExit() -> Bool {
        guard slot == nil, CTroupe_runqueue_is_empty(runQueue) else { return false }
        if isShared { return scheduler.isStopping && scheduler.allQueuesEmpty() }
        return exitRequested.load(ordering: .sequentiallyConsistent)
    }

    private func nextCell() -> AnyCell? {
        if let cell = slot {
            slot = nil
            // Fairness only matters when something else waits on this worker.
            if slotStreak < Worker.slotStreakLimit || CTroupe_runqueue_is_empty(runQueue) {
                slotStreak += 1
                return cell
            }
            Worker.queue(cell, on: runQueue)
        }
        slotStreak = 0
        if let cell = Worker.pop(runQueue) { return cell }
        guard isShared else { return nil }
        return scheduler.steal(for: self)
    }

    /// Puts a cell on a run queue, transferring one retain to the queue. Any thread.
    static func queue(_ cell: AnyCell, on queue: OpaquePointer) {
        _ = Unmanaged.passRetained(cell)
        CTroupe_runqueue_push(queue, cell.mailbox)
    }

    static func pop(_ queue: OpaquePointer) -> AnyCell? {
        guard let owner = CTroupe_runqueue_pop(queue) else { return nil }
        return Unmanaged<AnyCell>.fromOpaque(owner).takeRetainedValue()
    }

    private func hasWork() -> Bool {
        if slot != nil || !CTroupe_runqueue_is_empty(runQueue) { return true }
        return isShared && !scheduler.allQueuesEmpty()
    }

    private func spinForWork() -> Bool {
        // Shared workers announce that they poll, so that senders skip the futex wake-up; the
        // decrement comes before the re-check that precedes parking (Scheduler.notifyIdle).
        if isShared { scheduler.setPolling(true) }
        defer { if isShared { scheduler.setPolling(false) } }
        let deadline = CTroupe_monotonic_ns() + Worker.spinNanoseconds
        repeat {
            if hasWork() { return true }
            for _ in 0..<8 { CTroupe_cpu_relax() }
        } while CTroupe_monotonic_ns() < deadline
        return false
    }

    private func runCell(_ cell: AnyCell) {
        let limit = scheduler.batchSize
        var more = cell.runTurn(buffer: batchBuffer, limit: limit)
        // Nothing else waits here: keep going without queue traffic.
        while more && slot == nil && CTroupe_runqueue_is_empty(runQueue) {
            more = cell.runTurn(buffer: batchBuffer, limit: limit)
        }
        if more {
            Worker.queue(cell, on: runQueue)
            if isShared { scheduler.notifyIdle() }
        }
    }
}
