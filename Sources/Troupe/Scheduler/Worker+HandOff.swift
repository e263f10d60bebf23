import Synchronization
internal import CTroupe

/// Direct hand-off: an ask to an idle actor runs the actor's turn on the asking thread.
///
/// When code on one of this system's shared workers (an actor's turn, or a task on the
/// system's task executor, which runs as a turn of a job lane) asks an actor whose mailbox is
/// empty and whose turn nobody runs, the ask's push wins the actor's scheduling right, as any
/// push to an idle actor does. Instead of placing the actor in the worker's next-slot (to run
/// after the current turn) and, for a task, suspending until a worker has run it, the asking
/// thread runs that one turn in place. An answer given during the turn completes the ask there
/// and then, without suspending the task, touching another thread or arming the ask's timer.
///
/// What stays as it is:
/// - Only a push that found the mailbox empty and won the right hands off, so per-sender order
///   holds and nothing overtakes queued messages: a busy or queued actor is enqueued as always.
///   (The one exception, below, is a newborn whose first turn waits in this worker's own slot:
///   its turn takes its mailbox in order, so order holds there too.)
/// - The turn is an ordinary turn, limited to one message (the ask's, unless the actor was
///   never started); what it leaves pending goes to the workers with the right. An actor never
///   runs inside its own turn: while its turn runs, its right is held, so no push wins it.
/// - Turns in place nest at most ``maximumDepth`` deep on one thread (a chain of asks from
///   handlers); deeper asks are enqueued. Dedicated-thread actors always run on their threads
///   (`Scheduler.schedule` places them before it looks for a hand-off).
/// - The worker shows the actor as its current cell while the turn runs, so the stuck-handler
///   watchdog and ``ActorSystem/snapshot()`` see it; the handler counter advances as usual.
///
/// Contract: ``prepare(_:)`` and ``finish(_:)`` come in pairs around one send, on the same
/// thread, with nothing between them that could block; everything here touches only the
/// calling worker's own fields (``Worker/handOffTarget`` and the two after it), and, for a
/// newborn (below), that worker's slot word, which thieves on other workers compare-exchange
/// too: the owner's compare-exchange and a thief's decide who gets the entry, as in
/// `Worker+NextSlot.swift`.
///
/// An ask of an actor spawned on the same thread whose first turn has not run yet hands off
/// too: a spawn on a worker puts that turn (which runs `started`) into the worker's slot,
/// where the ask's push cannot win the right, so ``finish(_:)`` takes it out of the slot and
/// runs it in place, `started` and then the first message (`Worker.takeNewbornFromSlot`).
/// A task that spawns an actor and asks it (activating a virtual actor) so suspends nowhere.
@usableFromInline
enum HandOff {
    /// How many turns in place may nest on one thread.
    static let maximumDepth = 4

    /// Before sending to `target`: when the calling thread is a shared worker of `target`'s
    /// system with room for a turn in place, arms the capture of `target`'s scheduling right and
    /// returns the worker (unretained: the thread's own worker outlives the call); `nil` when no
    /// hand-off can happen (send as usual).
    @usableFromInline
    static func prepare(_ target: AnyCell) -> UnsafeMutableRawPointer? {
        guard let raw = CTroupe_current_worker() else {
            return _slowPath(target.system.isManual) ? prepareManually(target) : nil
        }
        // Safety: the current-worker slot names this thread's own worker, which outlives the call (its
        // thread clears the slot before it ends).
        let armed = Unmanaged<Worker>.fromOpaque(raw)._withUnsafeGuaranteedRef { worker -> Bool in
            worker.belongs(to: target.system.scheduler) && worker.armHandOff(for: target)
        }
        return armed ? raw : nil
    }

    /// A manual system (``ManualDriver``): the thread running a step stands in for the system's
    /// one worker, which has no thread of its own, so a step's ask of an idle actor runs that
    /// actor's turn in place as on a threaded system, and the driver lists it in its trace.
    /// Asks made outside a step (the test's own) never hand off: the driver runs the target.
    static func prepareManually(_ target: AnyCell) -> UnsafeMutableRawPointer? {
        guard let driver = target.system.manualDriver, driver.isSteppingOnThisThread else { return nil }
        // Safety: the scheduler holds its one worker for its whole life, and the system (held by the
        // target) holds the scheduler; only the driving thread touches the worker's hand-off fields.
        let worker = target.system.scheduler.sharedWorkers[0]
        return worker._withUnsafeGuaranteedRef { $0.armHandOff(for: target) } ? worker.toOpaque() : nil
    }

    /// After the send: disarms the capture and, when the send won `target`'s scheduling right,
    /// runs the turn in place. `worker` is what ``prepare(_:)`` returned.
    @usableFromInline
    static func finish(_ worker: UnsafeMutableRawPointer) {
        // Safety: `worker` is what `prepare` returned on this thread: its own worker, alive as there.
        Unmanaged<Worker>.fromOpaque(worker)._withUnsafeGuaranteedRef { $0.runCapturedTurn() }
    }
}

extension Scheduler {
    /// Turns run in place for asks so far, over every shared worker (approximate while they run).
    var handOffTurns: UInt {
        // Safety: `workersStorage` holds every shared worker for the scheduler's life.
        sharedWorkers.reduce(0) { $0 &+ $1._withUnsafeGuaranteedRef { $0.handOffTurns.load(ordering: .relaxed) } }
    }
}

extension Worker {
    /// Arms the capture of `target`'s scheduling right for a turn in place on this worker's
    /// thread (or, for a manual system's worker, its driving thread); false when this worker
    /// hands off no more (``ActorSystem/Configuration/directHandOff`` off, or turns in place
    /// already ``HandOff/maximumDepth`` deep).
    @inline(__always)
    func armHandOff(for target: AnyCell) -> Bool {
        guard handsOff, handOffDepth < HandOff.maximumDepth else { return false }
        // Safety: identity only: `Scheduler.schedule` compares this address, never dereferences it.
        handOffTarget = UInt(bitPattern: Unmanaged.passUnretained(target).toOpaque())
        return true
    }

    /// Whether the cell being scheduled, an entry's `word`, is the armed hand-off's target; if
    /// so, keeps the entry (and with it the scheduling right) for the turn in place.
    @inline(__always)
    func captureHandOff(_ word: UInt) -> Bool {
        guard _slowPath(handOffTarget == word) else { return false }
        handOffTarget = 0
        handOffCaptured = word
        return true
    }

    /// Takes the entry `word` out of this worker's slot for a turn in place when its cell has
    /// never run a turn: an actor spawned on this thread (a spawn puts its first turn, which
    /// runs `started`, into the spawner's worker's slot) and asked before that turn ran. Its
    /// mailbox then holds what was sent since the spawn, the ask last; the turn in place runs
    /// `started` and the first of them, so an ask sent first is answered here, without the
    /// asker suspending. Any other cell found there goes back: the slot is this worker's to
    /// place into, so nothing else can have filled it meanwhile (a thief only empties it).
    /// False when a thief took the entry first, or the cell has run before.
    private func takeNewbornFromSlot(_ word: UInt) -> Bool {
        // Acquiring: pairs with the releasing half of the exchange that placed the entry, as
        // `takeSlotAsOwner` does. Exactly one of this and a thief's compare-exchange wins.
        guard slotWord.compareExchange(expected: word, desired: 0, ordering: .acquiringAndReleasing).exchanged else {
            return false
        }
        // Safety: the compare-exchange gave this thread the entry and with it the cell's right, so
        // reading its flags is the right holder's read; the spawner's ref holds the cell.
        let isNewborn = Unmanaged<AnyCell>.fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
            ._withUnsafeGuaranteedRef { !$0.flags.contains(.started) }
        if isNewborn { return true }
        // Back where it was, unchanged: a thief that saw it keeps its observation.
        slotWord.store(word, ordering: .releasing)
        return false
    }

    /// Disarms the hand-off and runs the captured cell's turn, if a send captured one (or the
    /// target's first turn waits in this worker's slot: `takeNewbornFromSlot`). Own
    /// thread. The target's sender holds the cell (through its ref) for the whole call.
    fileprivate func runCapturedTurn() {
        let armed = handOffTarget
        handOffTarget = 0
        var word = handOffCaptured
        if word == 0 {
            // The send found the right taken. When the target is an actor spawned on this
            // thread whose first turn still waits in this worker's slot, that turn runs here.
            guard armed != 0, slotWord.load(ordering: .relaxed) == armed, takeNewbornFromSlot(armed) else { return }
            word = armed
        }
        handOffCaptured = 0
        // Safety: `word` (not 0) is the entry `Scheduler.schedule` captured on this thread for the armed
        // target, whose right this thread now holds; the sender's ref holds the cell through the call.
        let entry = Unmanaged<AnyCell>.fromOpaque(UnsafeRawPointer(bitPattern: word).unsafelyUnwrapped)
        entry._withUnsafeGuaranteedRef { cell in
            // The entry's retain, if it has one (a stopped actor's), is this thread's now.
            let retained = cell.entryRetained
            if _slowPath(cell.system.isManual) { cell.system.manualDriver?.recordTurnInPlace(of: cell) }
            let running = currentCell.load(ordering: .relaxed)
            currentCell.store(word, ordering: .relaxed)
            handOffDepth += 1
            handOffTurns.store(handOffTurns.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
            var slot: UnsafeMutableRawPointer? = nil
            // Safety: a one-entry envelope buffer on this frame, enough for the turn's limit of 1, used only
            // during the call.
            let more = withUnsafeMutablePointer(to: &slot) { buffer in
                cell.runTurn(buffer: buffer, limit: 1, progress: progress)
            }
            handOffDepth -= 1
            currentCell.store(running, ordering: .relaxed)
            // More is pending: the workers take the cell (and the right) like any other.
            if more { withScheduler { $0.schedule(cell) } }
            // Safety: gives back the retain this entry carried (a stopped actor's, from `makeEntry`), read
            // before the turn gave the right up; a rescheduled cell got an entry of its own above.
            if retained { entry.release() }
        }
    }
}
