#if canImport(Glibc)
    import Glibc
#endif
internal import CTroupe

/// Caller-runs turns for a thread that is not a worker (an I/O event loop, say): while a scope
/// is open (``ActorSystem/runningTurnsHere(maximumTurns:_:)``), a cell that this thread makes
/// runnable (its mailbox went from empty to non-empty, so this thread won its scheduling right)
/// is kept here instead of being queued for a worker, and runs one turn on this thread when the
/// scope's body has returned. Handing a message to an idle worker costs a futex wake-up and a
/// context switch, tens of microseconds on a small VM; running the turn here costs neither.
///
/// Contract (one object per thread, reused by every scope on it; only that thread touches it):
/// - The scope owns the scheduling right of every captured cell until the cell has run its
///   turn here or been handed to the workers; the scope ends only after one of the two, so no
///   captured cell is stranded. At most `maximumTurns` cells are captured per scope.
/// - A turn that leaves messages pending hands its cell to the workers (never a second turn
///   here), so one busy actor cannot keep the thread.
/// - Before this thread blocks (a blocking ask) the scope hands everything it holds to the
///   workers and stops capturing: the thread would otherwise wait for a turn that only it can
///   run. A blocking ask from inside a turn run here is refused, as on a shared worker.
/// - Cells of another system, dedicated-thread actors, and everything after the workers have
///   ended are never captured (see `Scheduler.schedule`).
///
/// The stored properties skip Swift's run-time exclusivity check (`@exclusivity(unchecked)`):
/// only the owning thread touches them, and no access spans a call that could come back here
/// (each is a single read, write or append), so no two accesses can overlap. The checks cost
/// ~80 instructions per access, several per remote call that TroupeCluster runs here.
final class InlineTurns {
    @exclusivity(unchecked) private var scheduler: Unmanaged<Scheduler>?
    @exclusivity(unchecked) private var captured: [Unmanaged<AnyCell>] = []
    /// Captures still allowed in the current scope.
    @exclusivity(unchecked) private var room = 0
    /// Whether this thread runs a captured cell's turn right now.
    @exclusivity(unchecked) private(set) var runningTurn = false
    @exclusivity(unchecked) private var buffer: UnsafeEnvelopeBuffer
    @exclusivity(unchecked) private var bufferCapacity: Int
    private let progress = UnsafeTurnProgress.allocate()
    /// `progress` when the last scope ended: what a scope adds to its scheduler's count of
    /// handlers started off the workers is the difference.
    @exclusivity(unchecked) private var progressCounted: UInt = 0

    private init() {
        bufferCapacity = 64
        // Safety: freed only by `deinit` or replaced (freed, then re-allocated) by `run`, never while a
        // turn uses it; its capacity is at least the batch size of every scope's scheduler.
        buffer = .allocate(capacity: bufferCapacity)
        captured.reserveCapacity(16)
    }

    deinit {
        // Safety: this thread's object is going, so no turn runs with the buffer or counter any more.
        buffer.deallocate()
        progress.deallocate()
    }

    /// The calling thread's object (made on its first scope, released when the thread exits).
    static var current: InlineTurns {
        if let raw = pthread_getspecific(inlineTurnsKey) {
            // Safety: the slot holds this thread's retained object (stored below) until the thread exits,
            // and only this thread reads it.
            return Unmanaged<InlineTurns>.fromOpaque(raw).takeUnretainedValue()
        }
        let turns = InlineTurns()
        // Safety: one retain per thread, given back once by the key's destructor (`inlineTurnsKey`).
        let status = pthread_setspecific(inlineTurnsKey, Unmanaged.passRetained(turns).toOpaque())
        precondition(status == 0, "pthread_setspecific failed with error \(status)")
        return turns
    }

    /// The scope open on the calling thread, if any.
    static var open: InlineTurns? {
        guard let raw = CTroupe_current_inline_turns() else { return nil }
        // Safety: an open scope is this thread's object, which the thread-specific slot holds retained.
        return Unmanaged<InlineTurns>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Runs `body` in a scope of `scheduler`, then the turns it captured. Owning thread, no
    /// scope open on it.
    func run<Result>(
        scheduler: Scheduler, maximumTurns: Int, _ body: () throws -> Result
    ) rethrows -> Result {
        if bufferCapacity < scheduler.batchSize {
            // Safety: no scope is open on this thread (`runningTurnsHere` checks), so no turn uses the buffer.
            buffer.deallocate()
            bufferCapacity = scheduler.batchSize
            buffer = .allocate(capacity: bufferCapacity)
        }
        // Safety (both unretained): the caller holds `scheduler` for the whole call, the `defer` clears
        // both before `run` returns, and `self` is this thread's object, which the key's retain holds.
        self.scheduler = Unmanaged.passUnretained(scheduler)
        room = maximumTurns
        CTroupe_set_current_inline_turns(Unmanaged.passUnretained(self).toOpaque())
        defer {
            // A body that threw: nothing runs here, the workers take what was captured.
            handOffCaptured()
            CTroupe_set_current_inline_turns(nil)
            self.scheduler = nil
            countHandlers(for: scheduler)
        }
        let result = try body()
        var next = 0
        while next < captured.count {
            let entry = captured[next]
            next += 1
            runTurn(entry, scheduler: scheduler)
        }
        captured.removeAll(keepingCapacity: true)
        return result
    }

    /// Adds the handlers this scope's turns started to `scheduler`'s count (one atomic add per
    /// scope that ran any, none per message), so that a snapshot's rate of messages counts them.
    private func countHandlers(for scheduler: Scheduler) {
        let started = progress.handlersStarted
        guard started != progressCounted else { return }
        scheduler.handlersStartedOffWorkers.add(started &- progressCounted, ordering: .relaxed)
        progressCounted = started
    }

    /// Keeps a cell whose scheduling right this thread just won, if the scope has room.
    /// Called by `Scheduler.schedule` on the owning thread.
    @inline(__always)
    func capture(_ entry: Unmanaged<AnyCell>, for scheduler: Scheduler) -> Bool {
        // Safety: identity only: the two addresses are compared, never dereferenced.
        guard room > 0, let mine = self.scheduler, mine.toOpaque() == Unmanaged.passUnretained(scheduler).toOpaque()
        else { return false }
        room -= 1
        captured.append(entry)
        return true
    }

    /// Hands every captured cell that has not run to the workers, and captures nothing more in
    /// this scope. Owning thread (before it blocks, and when the scope ends).
    func handOffCaptured() {
        room = 0
        guard let scheduler else { return }
        let waiting = captured
        captured.removeAll(keepingCapacity: true)
        // Safety: `scheduler` is set only while `run` runs (its caller holds it) and cleared at its end.
        scheduler._withUnsafeGuaranteedRef { scheduler in
            for entry in waiting { scheduler.schedule(Self.holdCell(entry)) }
        }
    }

    private func runTurn(_ entry: Unmanaged<AnyCell>, scheduler: Scheduler) {
        let cell = Self.holdCell(entry)
        runningTurn = true
        let more = cell.runTurn(buffer: buffer, limit: scheduler.batchSize, progress: progress)
        runningTurn = false
        if more {
            // Not captured again (`room` may be left): the workers take a busy cell.
            let left = room
            room = 0
            scheduler.schedule(cell)
            room = left
        }
    }

    /// The cell behind a run-queue entry, held strongly for the caller (as the shutdown drain
    /// does); the entry's own retain, if it had one, goes.
    private static func holdCell(_ entry: Unmanaged<AnyCell>) -> AnyCell {
        // Safety: the cell is alive: the entry's retain holds it, or (unretained) the live-actor list
        // does, which only the cell's own turn can change, and this thread holds its scheduling right.
        let cell = entry.takeUnretainedValue()
        // Safety: gives back the retain `makeEntry` put in the entry; `cell` keeps the object. Read while
        // this thread still holds the right (nobody else rewrites `entryRetained` meanwhile).
        if cell.entryRetained { entry.release() }
        return cell
    }
}

/// The key of every thread's ``InlineTurns`` (its destructor releases the thread's reference).
private let inlineTurnsKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key) { raw in
        // Safety: gives back the one retain `current` stored under this key for the exiting thread.
        if let raw { Unmanaged<InlineTurns>.fromOpaque(raw).release() }
    }
    precondition(status == 0, "pthread_key_create failed with error \(status)")
    return key
}()
