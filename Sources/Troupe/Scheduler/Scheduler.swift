internal import TroupeLocks
#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
internal import CTroupe

/// Worker threads, their run queues, and the rules for placing a scheduled actor.
///
/// Placement (`schedule`), by the thread that just won an actor's scheduling right:
/// - an actor with a dedicated thread goes to that thread's queue;
/// - on a shared worker of this scheduler: into the worker's next-slot, so it runs right after
///   the current turn on the same core (the previous slot occupant moves to the worker's queue,
///   where idle workers can steal it; an occupant stranded behind a long turn is taken by an
///   idle worker within microseconds: `Worker+NextSlot.swift`);
/// - from any other thread: a worker's queue, round-robin, and one parked worker is woken;
/// - an ask's target that the asking thread means to run in place (``HandOff``) is kept for it.
/// Idle workers steal from the others, spin briefly, then park on the event count.
final class Scheduler: @unchecked Sendable {  // immutable pointers to atomics; `dedicated` is locked
    let batchSize: Int
    /// Handlers started by turns run on threads that are not this scheduler's workers
    /// (``InlineTurns`` scopes: I/O threads that call `runningTurnsHere`), added once per scope
    /// that ran any (relaxed: a count for snapshots, ordering nothing). Workers count their own
    /// in their ``UnsafeTurnProgress``.
    let handlersStartedOffWorkers = Atomic<UInt>(0)
    /// A manual system's (``ManualDriver``): one worker without a thread, whose run queue the
    /// driver drains; its driving thread may hand off turns to itself.
    let isManual: Bool
    let idle = EventCount()
    /// Where the scheduler is in its life; moved by the system's thread that starts it and the
    /// one that shuts it down, read by workers (to exit) and by whoever schedules (to sweep).
    private let lifecycle = AtomicLifecycle<SchedulerState>(.created)
    private let dedicated = Locked<[Worker]>([])
    private let name: String
    /// Runs job lanes scheduled after termination.
    private let lateRunner: LateRunner
    /// The shared workers' run queues, for polling, stealing and external placement without
    /// reference counting (spinning workers and senders would otherwise contend on the
    /// array's and the workers' reference counts). Immutable after init.
    private let runQueues: UnsafeMutableBufferPointer<OpaquePointer>
    /// The shared workers, unretained (`workersStorage` holds them), for the same reason.
    /// Immutable after init.
    let sharedWorkers: UnsafeMutableBufferPointer<Unmanaged<Worker>>
    // Safety: freed only by `deinit`, after the counters in it are deinitialised; 192 bytes at
    // 64-byte alignment hold the four counters at the offsets below, none overlapping.
    /// Counters on cache lines of their own (192 bytes, 64-byte aligned), away from each other
    /// and from the scheduler's read-mostly fields: `spinning` (offset 0) counts shared workers
    /// polling for work before they park, so that a new run-queue entry needs no futex wake-up
    /// while one polls (see `notifyIdle`); `nextExternal` (offset 64) spreads cells scheduled
    /// from outside the workers round-robin; `watching` (offset 128) counts the workers that
    /// will look at the next-slots soon (pollers, and sleepers with a short timeout), and
    /// `slotWakePending` (offset 136) marks a wake-up sent for a slot placement and not yet
    /// answered (see `notifyIdleForSlot`).
    private let counters = UnsafeMutableRawPointer.allocate(byteCount: 192, alignment: 64)
    // Safety: `init` binds and initialises each counter at its offset with these types, and
    // `deinit` deinitialises them before freeing the block.
    private var spinning: UnsafeMutablePointer<Atomic<Int>> { counters.assumingMemoryBound(to: Atomic<Int>.self) }
    private var nextExternal: UnsafeMutablePointer<Atomic<Int>> {
        (counters + 64).assumingMemoryBound(to: Atomic<Int>.self)
    }
    private var watching: UnsafeMutablePointer<Atomic<Int>> {
        (counters + 128).assumingMemoryBound(to: Atomic<Int>.self)
    }
    private var slotWakePending: UnsafeMutablePointer<Atomic<Bool>> {
        (counters + 136).assumingMemoryBound(to: Atomic<Bool>.self)
    }

    init(name: String, workerCount: Int, pin: Bool, batchSize: Int, handOff: Bool = false, manual: Bool = false) {
        if workerCount < 1 {
            fatalError(
                "ActorSystem.Configuration.workerCount must be at least 1, got \(workerCount); pass nil for one worker per allowed CPU"
            )
        }
        if batchSize < 1 {
            fatalError("ActorSystem.Configuration.batchSize must be at least 1, got \(batchSize); the default is 64")
        }
        self.name = name
        self.batchSize = batchSize
        self.isManual = manual
        self.lateRunner = LateRunner(name: name, batchSize: batchSize)
        let cpus = Threads.allowedCPUs()
        var created: [Worker] = []
        self.workersStorage = []
        // Safety: both buffers are freed only by `deinit`; every slot is written in the loop at the end
        // of `init`, before the scheduler is shared, and never again (slots hold trivial values).
        self.runQueues = .allocate(capacity: workerCount)
        self.sharedWorkers = .allocate(capacity: workerCount)
        // Safety: binds and initialises each counter once, at the offsets the accessors above read
        // (inside the 192 bytes, 8-byte aligned); nothing reads them before this.
        counters.bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        (counters + 64).bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        (counters + 128).bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        (counters + 136).bindMemory(to: Atomic<Bool>.self, capacity: 1).initialize(to: Atomic(false))
        // Workers refer back to the scheduler, so they are built once `self` exists.
        for index in 0..<workerCount {
            let cpu = pin && !cpus.isEmpty ? cpus[index % cpus.count] : nil
            created.append(
                Worker(index: index, scheduler: self, isShared: true, wakeup: idle, cpu: cpu, handsOff: handOff))
        }
        self.workersStorage = created
        // Safety: unretained: `workersStorage`, written once just above, holds every worker for the
        // scheduler's whole life, and these buffers go with the scheduler.
        for (index, worker) in created.enumerated() {
            runQueues[index] = worker.runQueue
            sharedWorkers[index] = Unmanaged.passUnretained(worker)
        }
    }

    deinit {
        let state = lifecycle.load()
        assert(state == .created || state == .terminated, "a scheduler is released \(state): its threads still run")
        // Safety: released only after `stopAndJoin` joined every thread that reads these (asserted
        // above), so nothing reaches the buffers or counters again; counters are deinitialised first.
        runQueues.deallocate()
        sharedWorkers.deallocate()
        spinning.deinitialize(count: 1)
        nextExternal.deinitialize(count: 1)
        watching.deinitialize(count: 1)
        slotWakePending.deinitialize(count: 1)
        counters.deallocate()
    }

    /// Starts the threads; called once by the system.
    func start() {
        lifecycle.advance(to: .running)
        for worker in shared { worker.start(name: "\(name)-w\(worker.index)") }
    }

    private var workersStorage: [Worker]  // written once, in init
    /// The shared workers.
    var shared: [Worker] { workersStorage }

    var isStopping: Bool { lifecycle.hasReached(.stopping) }
    /// Whether the workers have ended: from then on cells run on the thread that schedules them.
    var hasTerminated: Bool { lifecycle.is(.terminated) }

    /// The index of the calling thread's shared worker, when it is one of this scheduler's.
    func currentSharedWorkerIndex() -> Int? {
        guard let raw = CTroupe_current_worker() else { return nil }
        // Safety: the current-worker slot is set by a worker's own thread for its run loop and
        // cleared before the thread ends, so the worker outlives this call on that thread.
        return Unmanaged<Worker>.fromOpaque(raw)._withUnsafeGuaranteedRef { worker in
            worker.isShared && worker.belongs(to: self) ? worker.index : nil
        }
    }

    /// Places a cell whose scheduling right the caller just won. Any thread.
    func schedule(_ cell: AnyCell) {
        let entry = cell.makeEntry()
        if let dedicated = cell.config?.dedicated {
            dedicated.push(entry)
            // A dedicated thread ends when its actor stops; late messages to the stopped actor
            // are then dead-lettered here, on the sender's thread.
            if _slowPath(
                dedicated.hasExitRequest || lifecycle.is(.terminated))
            {
                drain(dedicated.runQueue)
            }
            return
        }
        if let raw = CTroupe_current_worker() {
            // Safety: the calling thread's own worker outlives this call (the current-worker
            // slot is cleared before its thread ends): borrow it without retaining. The closure
            // captures the entry's word, not the cell (a capture costs a
            // retain/release pair per message).
            let word = UInt(bitPattern: entry.toOpaque())
            let placement = Unmanaged<Worker>.fromOpaque(raw)._withUnsafeGuaranteedRef { worker -> Placement in
                guard worker.isShared && worker.belongs(to: self) else { return .elsewhere }
                // The asking thread takes the turn itself (Worker+HandOff.swift).
                if worker.captureHandOff(word) { return .handedOff }
                return worker.placeInSlot(word: word) ? .slotDisplacing : .slot
            }
            switch placement {
            case .slot: notifyIdleForSlot(); return
            case .slotDisplacing: notifyIdle(); return
            case .handedOff: return
            case .elsewhere: break
            }
        } else if _slowPath(isManual) {
            // A manual system: its driver's thread, in a step, may have armed a hand-off.
            if captureForManualHandOff(entry) { return }
        } else if let raw = CTroupe_current_inline_turns(), !lifecycle.isRelaxed(.terminated) {
            // A thread outside the workers with an inline-turns scope open: the cell runs its
            // turn there when the scope's body returns (see `InlineTurns`).
            // Safety: the inline-turns slot belongs to a scope on this thread, open for the
            // whole call (the scope clears it when its body returns).
            let captured = Unmanaged<InlineTurns>.fromOpaque(raw)._withUnsafeGuaranteedRef {
                $0.capture(entry, for: self)
            }
            if captured { return }
        }
        // Safety: `runQueues` and `counters` live from `init` to `deinit`, and the caller holds the
        // scheduler (through the system its cell holds) for this call.
        let queue = runQueues[
            Int(
                bitPattern: UInt(bitPattern: nextExternal.pointee.wrappingAdd(1, ordering: .relaxed).oldValue)
                    % UInt(runQueues.count))]
        Worker.queue(entry, on: queue)
        notifyIdle()
        if _slowPath(lifecycle.is(.terminated)) { sweep() }
    }

    /// A manual system's hand-off (``HandOff/prepareManually(_:)``): when the driver's thread
    /// armed its one worker for this very cell, the entry is kept for the turn in place. The
    /// worker has no thread of its own; only the driving thread touches its hand-off fields.
    private func captureForManualHandOff(_ entry: Unmanaged<AnyCell>) -> Bool {
        let word = UInt(bitPattern: entry.toOpaque())
        // Safety: `sharedWorkers` holds the manual system's one worker for the scheduler's life.
        return sharedWorkers[0]._withUnsafeGuaranteedRef { $0.captureHandOff(word) }
    }

    /// Where `schedule` put a cell, on a worker thread.
    private enum Placement {
        /// Into the worker's empty next-slot.
        case slot
        /// Into the next-slot, whose previous occupant moved to the worker's run queue.
        case slotDisplacing
        /// Kept for the asking thread's turn in place (``Worker/handOffTarget``).
        case handedOff
        /// Not this scheduler's shared worker: a run queue, as from any other thread.
        case elsewhere
    }

    /// Pops a cell from another shared worker's queue. Worker threads only.
    func steal(for thief: Worker) -> Unmanaged<AnyCell>? {
        let count = runQueues.count
        guard count > 1 else { return nil }
        for offset in 1..<count {
            if let cell = Worker.tryPop(runQueues[(thief.index + offset) % count]) { return cell }
        }
        return nil
    }

    func allQueuesEmpty() -> Bool {
        for queue in runQueues where !CTroupe_runqueue_is_empty(queue) { return false }
        return true
    }

    /// After putting a cell on a shared run queue: wakes a parked worker unless one is
    /// polling. Any thread.
    ///
    /// No lost wake-up: the caller's push, this fence and the load of `spinning` pair with a
    /// poller's decrement of `spinning` (sequentially consistent) followed by its look at every
    /// queue. If the load saw a poller, that look comes later in the total order and finds the
    /// cell: the poller parks only after re-checking every queue, and a poller that takes some
    /// other cell wakes a sleeper when cells remain queued (Worker.run).
    func notifyIdle() {
        atomicMemoryFence(ordering: .sequentiallyConsistent)
        // Safety: the counter block lives from `init` to `deinit`; callers hold the scheduler or are
        // its workers, which it joins before it goes.
        if spinning.pointee.load(ordering: .relaxed) == 0 { idle.notify() }
    }

    /// After a placement into a worker's next-slot, whose exchange was the full barrier: when
    /// no worker watches the slots, wakes one sleeper, so that someone looks if the cell gets
    /// stranded (see `Worker+NextSlot.swift`). One load while a worker watches (the steady
    /// state of request/response traffic).
    ///
    /// At most one such wake-up is in flight (`slotWakePending`, cleared by the next worker
    /// that starts watching): a woken worker needs tens of microseconds to run, and every
    /// placement meanwhile would otherwise issue a futex call of its own (a storm measured at
    /// +20–100 % on PingPong). No lost wake-up: the flag is set only by a placer whose notify
    /// either woke a sleeper or found none (then a worker about to park re-checks the slots
    /// after announcing itself, and starts watching, clearing the flag).
    @inline(__always)
    func notifyIdleForSlot() {
        // Safety: the counter block lives from `init` to `deinit`; callers hold the scheduler or are
        // its workers, which it joins before it goes.
        guard watching.pointee.load(ordering: .sequentiallyConsistent) == 0 else { return }
        if slotWakePending.pointee.load(ordering: .relaxed) { return }
        if slotWakePending.pointee.exchange(true, ordering: .acquiringAndReleasing) { return }
        idle.notify()
    }

    /// A shared worker starts (true) or stops (false) polling for work. Worker threads only.
    func setPolling(_ polling: Bool) {
        // Safety: the counter block lives from `init` to `deinit`; only this scheduler's workers call
        // this, and the scheduler joins them before it goes.
        if polling {
            spinning.pointee.add(1, ordering: .sequentiallyConsistent)
            setWatching(true)
        } else {
            setWatching(false)
            spinning.pointee.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// A shared worker starts (true) or stops (false) watching the next-slots: while polling,
    /// and while sleeping with a short timeout because some slot was occupied. Worker threads only.
    func setWatching(_ watches: Bool) {
        // Safety: the counter block lives from `init` to `deinit`; only this scheduler's workers call
        // this, and the scheduler joins them before it goes.
        if watches {
            watching.pointee.add(1, ordering: .sequentiallyConsistent)
            if slotWakePending.pointee.load(ordering: .relaxed) {
                slotWakePending.pointee.store(false, ordering: .releasing)
            }
        } else {
            watching.pointee.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// A new thread for one blocking actor.
    func makeDedicatedWorker(label: String) -> Worker {
        let worker = Worker(index: -1, scheduler: self, isShared: false, wakeup: EventCount(), cpu: nil)
        let finished = dedicated.withLock { workers in
            // Read each flag once: a worker that exits meanwhile stays listed and is joined later.
            var done: [Worker] = []
            workers.removeAll { candidate in
                let exited = candidate.hasExited
                if exited { done.append(candidate) }
                return exited
            }
            workers.append(worker)
            return done
        }
        for old in finished { old.join() }
        worker.start(name: label)
        return worker
    }

    /// The dedicated threads that have not exited.
    var dedicatedWorkers: [Worker] {
        dedicated.withLock { workers in workers.filter { !$0.hasExited } }
    }

    /// Ends and joins a dedicated worker whose actor never started (spawn raced shutdown).
    /// If shutdown already took it from the list, shutdown joins it instead.
    func retireDedicated(_ worker: Worker) {
        let mine = dedicated.withLock { workers in
            guard let index = workers.firstIndex(where: { $0 === worker }) else { return false }
            workers.remove(at: index)
            return true
        }
        worker.requestExit()
        if mine { worker.join() }
    }

    /// Lets shared workers exit once every queue is empty, joins them and every dedicated
    /// thread, then marks the scheduler terminated: from then on whoever schedules a cell
    /// drains it on its own thread (`sweep`). Not on a worker thread.
    func stopAndJoin() {
        lifecycle.advance(to: .stopping)
        idle.notify(all: true)
        for worker in shared { worker.join() }
        let remaining = dedicated.withLock { workers in
            let all = workers
            workers.removeAll()
            return all
        }
        for worker in remaining {
            worker.requestExit()
            worker.join()
        }
        lifecycle.advance(to: .terminated)
        sweep()
    }

    /// After termination: runs whatever is still queued on the calling thread. Cells are
    /// stopped by then, so their turns dead-letter what they find.
    private func sweep() {
        for worker in shared { drain(worker.runQueue) }
    }

    private func drain(_ queue: OpaquePointer) {
        // Safety: this call's own buffer and counter, freed by the `defer` after the last turn that
        // uses them; the watchdog reads only workers' counters, never this one.
        let buffer = UnsafeEnvelopeBuffer.allocate(capacity: batchSize)
        let progress = UnsafeTurnProgress.allocate()
        defer {
            buffer.deallocate()
            progress.deallocate()
        }
        while let entry = Worker.tryPop(queue) {
            // A strong reference for the whole drain; the entry's own retain, if any, goes.
            // Safety: the cell is alive: the entry's retain holds it, or (unretained entry) the live-actor
            // list does, and only the cell's own turn, which needs the right this thread holds, takes it off.
            let cell = entry.takeUnretainedValue()
            if cell.isJobLane {
                // Swift jobs never run inside the code that enqueued them (see LateRunner).
                lateRunner.submit(entry)
                continue
            }
            // Safety: gives back the retain `makeEntry` put in the entry; `cell` keeps the object. Read
            // before the turns: once they give the right up, another thread may rewrite `entryRetained`.
            if cell.entryRetained { entry.release() }
            while cell.runTurn(buffer: buffer, limit: batchSize, progress: progress) {}
        }
    }
}

/// A scheduler's life, in order (``AtomicLifecycle`` checks the moves in debug builds).
enum SchedulerState: UInt8, LifecycleState {
    /// Made; no thread yet.
    case created
    /// The shared workers run.
    case running
    /// Shutdown: workers exit once every queue is empty.
    case stopping
    /// Every thread joined: whoever schedules a cell from now on drains it on its own thread.
    case terminated

    static func allows(from current: Self, to next: Self) -> Bool {
        switch (current, next) {
        // A manually driven system (TroupeTesting) never starts its workers: created -> stopping.
        case (.created, .running), (.created, .stopping), (.running, .stopping), (.stopping, .terminated): true
        default: false
        }
    }
}
