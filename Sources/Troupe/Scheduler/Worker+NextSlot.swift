import Synchronization
internal import CTroupe

/// The next-slot (Go's `runnext`, Tokio's LIFO slot): a cell that one of this worker's turns
/// made runnable runs right after that turn, on the same core, without touching a run queue.
///
/// The slot must not strand its cell: when the turn that filled it runs long (a blocking call,
/// a busy loop), another worker takes the cell. Tokio learned that stealing from the slot
/// eagerly costs short-handler workloads dearly (tokio-rs/tokio#8065, which reverted #7431);
/// Go steals `runnext` only when its owner has kept it for a few microseconds. Troupe does the
/// same:
///
/// - The owner exchanges the slot (`placeInSlot`, `takeSlotAsOwner`), and bumps `turnStamp`
///   at the start of every turn (`markTurnStarted`).
/// - A polling worker (a thief) looks at the other shared workers' slots at most once per
///   `slotLookIntervalNanoseconds`. When it sees the same cell and the same turn stamp for
///   `strandedGraceNanoseconds`, the owner is stuck in one turn and the cell is stranded: the
///   thief takes it with a compare-exchange from that cell to empty. Exactly one of the owner's
///   exchange and the thief's compare-exchange gets the cell's entry, and with it the
///   scheduling right.
/// - A placement into the slot is an exchange (a full barrier) followed by a look at the
///   scheduler's count of workers that watch the slots (pollers, and sleepers with a short
///   timeout). When nobody watches, one sleeper is woken (at most one such wake-up in flight:
///   `Scheduler.notifyIdleForSlot`), so that someone looks if the cell gets stranded. Pairing:
///   a worker stops watching (sequentially consistent decrement) before its last look at the
///   slots; a placer that saw it watching is seen by that look, and the worker then sleeps
///   with a short timeout (`strandBackstopNanoseconds`) as a watcher instead of for good.
/// - While cells pass through other workers' slots a poller stays awake up to
///   `maximumSpinNanoseconds`, then sleeps for the short timeout, and polls again: request/
///   response traffic costs its workers no futex call per message, and a polling worker on
///   the other core costs them nothing measurable (its looks are paced).
///
/// Bound: a cell placed into a slot whose turn then runs long is picked up by a polling worker
/// within `strandedGraceNanoseconds` plus one look interval (about 4–6 µs); by a watcher asleep
/// on its short timeout within that timeout; by a worker that slept for good (the system was
/// idle) after the futex wake-up's latency plus the grace.
extension Worker {
    /// What a thief saw in one other worker's slot.
    struct StrandObservation {
        var word: UInt = 0
        var stamp: UInt = 0
        var since: Int64 = 0
    }

    enum SlotLook {
        case empty
        case occupied
        case stolen(Unmanaged<AnyCell>)
    }

    /// How long a cell must sit in a slot while the owner stays in one turn before a thief takes it.
    static let strandedGraceNanoseconds: Int64 = 4_000
    /// How often a poller looks at the other workers' slots.
    static let slotLookIntervalNanoseconds: Int64 = 2_000
    /// How long a worker that parks while some slot is occupied sleeps before it looks again.
    static let strandBackstopNanoseconds: Int64 = 100_000

    // MARK: Owner (this worker's thread)

    var isSlotEmpty: Bool { slotWord.load(ordering: .relaxed) == 0 }

    /// Takes the slot's entry, unless a thief took it first.
    @inline(__always)
    func takeSlotAsOwner() -> Unmanaged<AnyCell>? {
        guard slotWord.load(ordering: .relaxed) != 0 else { return nil }
        let word = slotWord.exchange(0, ordering: .acquiringAndReleasing)
        // Safety: a non-zero word is the cell address of an entry placed with its right; the exchange gave
        // it to this thread alone, and the entry's retain or the live-actor list holds the cell.
        guard let raw = UnsafeMutableRawPointer(bitPattern: word) else { return nil }
        return Unmanaged<AnyCell>.fromOpaque(raw)
    }

    /// Puts a cell's entry (whose scheduling right the caller holds, passed as its address)
    /// into the slot; a displaced entry moves to this worker's run queue, where idle workers
    /// can steal it. Returns whether one was displaced; the caller (the scheduler, so that this
    /// worker's unowned reference to it costs no retain) then wakes a worker for the run
    /// queue, else for the slot.
    @inline(__always)
    func placeInSlot(word: UInt) -> Bool {
        let displaced = slotWord.exchange(word, ordering: .sequentiallyConsistent)
        // Safety: a non-zero word is the cell address of an entry placed with its right; the exchange gave
        // it to this thread alone, and the entry's retain or the live-actor list holds the cell.
        guard let raw = UnsafeMutableRawPointer(bitPattern: displaced) else { return false }
        Worker.queue(Unmanaged<AnyCell>.fromOpaque(raw), on: runQueue)
        return true
    }

    @inline(__always)
    func markTurnStarted() {
        turnStamp.store(turnStamp.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    // MARK: Thief (a polling shared worker, on its own thread)

    /// Looks at every other shared worker's slot; takes a cell stranded there.
    func lookForStrandedCell(now: Int64) -> SlotLook {
        let workers = withScheduler { $0.sharedWorkers }
        if strandWatch.count != workers.count {
            strandWatch = Array(repeating: StrandObservation(), count: workers.count)
        }
        var sawOccupied = false
        for reference in workers {
            // Borrowed (the scheduler holds every worker): a retain would write to the cache
            // line of the victim's slot and stamp.
            // Safety: `workersStorage` holds every shared worker for the scheduler's life, and the scheduler
            // joins this thread before it goes.
            let outcome = reference._withUnsafeGuaranteedRef { victim -> SlotLook? in
                guard victim !== self else { return nil }
                return look(at: victim, now: now, sawOccupied: &sawOccupied)
            }
            if let outcome { return outcome }
        }
        return sawOccupied ? .occupied : .empty
    }

    /// One victim's slot: `.stolen` when its cell has been stranded for the grace period and
    /// this thief took it, else nil (and `sawOccupied` set when the slot is occupied).
    @inline(__always)
    private func look(at victim: Worker, now: Int64, sawOccupied: inout Bool) -> SlotLook? {
        let word = victim.slotWord.load(ordering: .relaxed)
        guard word != 0 else {
            strandWatch[victim.index].word = 0
            return nil
        }
        sawOccupied = true
        let stamp = victim.turnStamp.load(ordering: .relaxed)
        let seen = strandWatch[victim.index]
        guard seen.word == word && seen.stamp == stamp else {
            strandWatch[victim.index] = StrandObservation(word: word, stamp: stamp, since: now)
            return nil
        }
        guard now - seen.since >= Worker.strandedGraceNanoseconds else { return nil }
        strandWatch[victim.index].word = 0
        guard victim.slotWord.compareExchange(expected: word, desired: 0, ordering: .acquiringAndReleasing).exchanged
        else { return nil }
        // Safety: the compare-exchange took this entry (and its right) out of the slot, so no one else
        // has it; the entry's retain or the live-actor list holds the cell.
        return .stolen(Unmanaged<AnyCell>.fromOpaque(UnsafeMutableRawPointer(bitPattern: word)!))
    }
}

extension Scheduler {
    /// Whether a shared worker other than `worker` has a cell in its slot. Any thread.
    func anySlotOccupied(besides worker: Worker) -> Bool {
        for other in sharedWorkers {
            // Safety: `workersStorage` holds every shared worker for the scheduler's life.
            let occupied = other._withUnsafeGuaranteedRef {
                $0 !== worker && $0.slotWord.load(ordering: .sequentiallyConsistent) != 0
            }
            if occupied { return true }
        }
        return false
    }
}
