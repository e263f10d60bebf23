internal import CTroupe
internal import TroupeLocks

/// Runs the cells that Swift executors schedule after the workers have ended (job lanes), on a
/// thread of its own.
///
/// A job enqueued after shutdown must not be dropped (its task would never resume) and must
/// not run inside the code that enqueued it: that code is often a job itself (a task resuming
/// another), and Swift does not expect a task to run while the job that enqueued it is still on
/// the stack. Actors' cells are still swept on the scheduling thread (their turns only
/// dead-letter by then).
///
/// The thread starts on the first submission and ends after `idleNanoseconds` without work; a
/// later submission starts a new one. No lane is stranded: `submit` pushes before it checks,
/// under the `running` lock, whether a thread runs, and a thread ends only after finding the queue empty
/// under the same lock.
final class LateRunner: @unchecked Sendable {  // the queue is thread-safe; `running` is locked
    private let queue: OpaquePointer = CTroupe_runqueue_create()!
    private let wakeup = EventCount()
    private let running = Locked(false)
    private let batchSize: Int
    private let name: String
    static let idleNanoseconds: Int64 = 100_000_000

    init(name: String, batchSize: Int) {
        self.name = name
        self.batchSize = batchSize
    }

    deinit { CTroupe_runqueue_destroy(queue) }

    /// Queues a cell's entry (with its scheduling right). Any thread.
    func submit(_ entry: Unmanaged<AnyCell>) {
        Worker.queue(entry, on: queue)
        wakeup.notify()
        let start = running.withLock { running -> Bool in
            if running { return false }
            running = true
            return true
        }
        if start { Threads.detach(Threads.start(name: "\(name)-late") { [self] in run() }) }
    }

    private func run() {
        // Safety: this thread's own buffer and counter, freed by the `defer` when the thread ends, after
        // its last turn; the watchdog reads only workers' counters, never this one.
        let buffer = UnsafeEnvelopeBuffer.allocate(capacity: batchSize)
        let progress = UnsafeTurnProgress.allocate()
        defer {
            buffer.deallocate()
            progress.deallocate()
        }
        while true {
            if let entry = Worker.tryPop(queue) {
                // A strong reference for the turns; the entry's own retain goes now, while this
                // thread holds the scheduling right (once the last turn gives the right up,
                // another thread may place the cell again and rewrite `entryRetained`).
                // Safety: only job lanes come here, and a lane's entry always carries a retain (it is on no
                // live-actor list), so the cell is alive until the release below.
                let cell = entry.takeUnretainedValue()
                // Safety: gives back the retain `makeEntry` put in the entry; `cell` keeps the object.
                if cell.entryRetained { entry.release() }
                while cell.runTurn(buffer: buffer, limit: batchSize, progress: progress) {}
                continue
            }
            let epoch = wakeup.prepareWait()
            if !CTroupe_runqueue_is_empty(queue) {
                wakeup.cancelWait()
                continue
            }
            wakeup.wait(epoch: epoch, timeoutNanoseconds: LateRunner.idleNanoseconds)
            let ends = running.withLock { running -> Bool in
                guard CTroupe_runqueue_is_empty(queue) else { return false }
                running = false
                return true
            }
            if ends { return }
        }
    }
}
