internal import TroupeLocks
import Synchronization
internal import CTroupe
#if canImport(Glibc)
    import Glibc
#endif

/// Runs a system's actors on the calling thread, one message at a time, on virtual time: the
/// engine of `TroupeTesting`'s deterministic system (use that; this is its public foundation).
///
/// A system made with a driver (``ActorSystem/Configuration/manualDriver``) starts no worker
/// or timer thread. Actors that become runnable wait in the driver's ``runnable`` list until a
/// caller runs one of them with ``run(at:)``, which handles exactly one message (and, for a new
/// actor, its `started` hook first) on the caller's thread. Timers, periodic timers, ask
/// timeouts and delayed restarts wait on a virtual clock that only ``advance(by:)`` moves.
/// Swift tasks on the system's task executor (`context.run`, tasks that prefer it) run as jobs
/// of its lanes, listed and chosen like actors. Dedicated threads are not made: such actors run
/// like the others. The stuck-handler watchdog is off.
///
/// As on the workers, an ask that a step makes of an idle actor (its mailbox empty, nobody
/// running it) runs that actor's turn in place, inside the step, unless
/// ``ActorSystem/Configuration/directHandOff`` is off: the trace lists that turn as a step of
/// its own, marked ``Step/ranInPlace``, right after the step that asked. It depends only on the
/// actors' state, so a seed still gives one trace.
///
/// Which runnable actor goes next is the ``ManualSchedule``'s choice (by default the one that
/// became runnable first); `TroupeTesting` installs a seeded one. An `await ref.ask` made
/// outside a step (by the test itself) drives the system until it is answered, moving virtual
/// time to the next deadline whenever nothing can run, so it neither hangs nor needs real time.
///
/// Thread-safety: one caller at a time drives (the test's thread, or the thread that shuts the
/// system down); `runnable` is locked because senders on other threads (none in a deterministic
/// test, but a stray one must not corrupt it) add to the run queue it drains.
public final class ManualDriver: @unchecked Sendable {  // the system is set once before use; the rest is locked
    private let state = Locked<State>(State())
    /// The system, weakly: it holds the driver (through its configuration and its own
    /// property), and a driver kept after its system was released must fail with a message,
    /// not read freed memory. Set once by the system's initialiser.
    private weak var attachedSystem: ActorSystem?
    private var isAttached = false
    // Safety: both are freed only by `deinit`; a step runs one envelope at a time (limit 1), so one
    // slot suffices, and only the driving thread uses them (one caller at a time).
    private let buffer = UnsafeEnvelopeBuffer.allocate(capacity: 1)
    private let progress = UnsafeTurnProgress.allocate()

    struct State {
        /// Runnable cells, in the order they became runnable; each entry carries its scheduling
        /// right (and a retain when `AnyCell.entryRetained` says so).
        var pending: [Unmanaged<AnyCell>] = []
        var steps: [Step] = []
        var schedule: any ManualSchedule = FirstRunnable()
    }
    /// The thread running a step now (0: none): an ask awaited on it suspends as usual, one
    /// awaited elsewhere drives the system.
    private let steppingThread = Atomic<UInt>(0)

    public init() {}

    /// Chooses which runnable actor each ``step()`` runs (and may hold some back for a while).
    public func setSchedule(_ schedule: any ManualSchedule) {
        state.withLock { $0.schedule = schedule }
    }

    deinit {
        // Safety: the driver is going, so no step runs with the buffer or counter any more.
        buffer.deallocate()
        progress.deallocate()
        let pending = state.withLock { $0.pending }
        // Safety: pending entries hold their cells (a retain, or the live-actor list for an unretained
        // one); each retained one is given back once here, as nothing will run it.
        for entry in pending where entry.takeUnretainedValue().entryRetained { entry.release() }
    }

    /// Called once by the system's initialiser.
    func attach(_ system: ActorSystem) {
        requireValidUse(!isAttached, "a ManualDriver drives one ActorSystem; make a new ManualDriver for each system")
        attachedSystem = system
        isAttached = true
    }

    private var system: ActorSystem {
        guard let system = attachedSystem else {
            preconditionFailure(
                isAttached
                    ? "this ManualDriver's ActorSystem was released: keep the system alive while you drive it"
                    : "this ManualDriver is not attached to a system: pass it in ActorSystem.Configuration.manualDriver"
            )
        }
        return system
    }

    /// Moves what was scheduled since the last look from the run queue to `pending`.
    private func collect() {
        // Safety: the scheduler (held by the system) holds its shared workers for its whole life.
        let queue = system.scheduler.sharedWorkers[0]._withUnsafeGuaranteedRef { $0.runQueue }
        state.withLock { state in
            while let entry = Worker.tryPop(queue) { state.pending.append(entry) }
        }
    }

    /// The actors (and job lanes) with something to run, in the order they became runnable.
    public var runnable: [ActorAddress] {
        collect()
        // Safety: a pending entry's cell is held by its retain or the live-actor list while it waits.
        return state.withLock { state in state.pending.map { $0.takeUnretainedValue().address } }
    }

    /// How many are runnable.
    public var runnableCount: Int {
        collect()
        return state.withLock { $0.pending.count }
    }

    /// Messages (or jobs) run so far.
    public var steps: Int { state.withLock { $0.steps.count } }

    /// Every step run so far, in order.
    public var trace: [Step] { state.withLock { $0.steps } }

    /// What one step ran.
    public struct Step: Sendable, CustomStringConvertible {
        /// The step's number, from 1.
        public let number: Int
        /// The actor (or job lane) that ran.
        public let actor: ActorAddress
        /// Whether it was a Swift executor's job rather than an actor's message.
        public let isSwiftJob: Bool
        /// The virtual time it ran at.
        public let time: Duration
        /// Whether the turn ran inside the step before it, for an ask that step made of this
        /// idle actor (direct hand-off, as a worker would run it; see
        /// ``ActorSystem/Configuration/directHandOff``). Such a step was not chosen by the
        /// schedule: it is part of the asking step.
        public let ranInPlace: Bool
        public var description: String {
            "#\(number) \(actor)\(isSwiftJob ? " (Swift job)" : "")\(ranInPlace ? " (in place)" : "") at \(time)"
        }
    }

    /// Runs one message (or Swift job) of the runnable actor at `index` of ``runnable``, on the
    /// calling thread, and returns what ran; nil when nothing is runnable. An index past the end
    /// is a misuse (trap).
    @discardableResult
    public func run(at index: Int) -> Step? {
        collect()
        let entry: Unmanaged<AnyCell>? = state.withLock { state in
            guard !state.pending.isEmpty else { return nil }
            requireValidUse(
                index >= 0 && index < state.pending.count,
                "ManualDriver.run(at: \(index)): only \(state.pending.count) actors are runnable")
            return state.pending.remove(at: index)
        }
        guard let entry else { return nil }
        // A strong reference for the turn; the entry's own retain, if any, goes now.
        // Safety: this thread took the entry (and the right) out of `pending`: its retain or the
        // live-actor list holds the cell, and only the cell's own turn, run here, can change that.
        let cell = entry.takeUnretainedValue()
        // Safety: gives back the retain `makeEntry` put in the entry; `cell` keeps the object.
        if cell.entryRetained { entry.release() }
        let step = appendStep(running: cell, ranInPlace: false)
        let outer = steppingThread.exchange(UInt(pthread_self()), ordering: .relaxed)
        let more = cell.runTurn(buffer: buffer, limit: 1, progress: progress)
        steppingThread.store(outer, ordering: .relaxed)
        if more {
            let again = cell.makeEntry()
            state.withLock { $0.pending.append(again) }
        }
        return step
    }

    /// Whether the calling thread is running a step now (a turn in place may nest in it).
    var isSteppingOnThisThread: Bool { steppingThread.load(ordering: .relaxed) == UInt(pthread_self()) }

    /// Lists a turn that a step's ask runs in place (`Worker+HandOff.swift`), as a step of its
    /// own, right after the step that asked. The driving thread, inside ``run(at:)``.
    func recordTurnInPlace(of cell: AnyCell) {
        appendStep(running: cell, ranInPlace: true)
    }

    /// Adds the next step to the trace and returns it.
    @discardableResult
    private func appendStep(running cell: AnyCell, ranInPlace: Bool) -> Step {
        let time = now
        return state.withLock { state in
            let step = Step(
                number: state.steps.count + 1, actor: cell.address, isSwiftJob: cell.isJobLane, time: time,
                ranInPlace: ranInPlace)
            state.steps.append(step)
            return step
        }
    }

    /// Runs one message (or job) of the runnable actor the schedule chooses; nil when nothing
    /// can run (none runnable, or the schedule holds every one back).
    @discardableResult
    public func step() -> Step? {
        let runnable = self.runnable
        guard !runnable.isEmpty else { return nil }
        let (schedule, current) = (state.withLock { $0.schedule }, now)
        guard let index = schedule.choose(among: runnable, at: current) else { return nil }
        return run(at: index)
    }

    /// When something next becomes due: a timer (or ask timeout, delayed restart), or the
    /// schedule's next release of an actor it holds back.
    public var nextEvent: Duration? {
        let (schedule, current) = (state.withLock { $0.schedule }, now)
        return [nextDeadline, schedule.nextRelease(after: current)].compactMap { $0 }.min()
    }

    /// Steps (moving virtual time to the next event whenever nothing can run) until `done`.
    /// Traps when nothing can ever make it true, saying why.
    public func run(until done: () -> Bool, what: @autoclosure () -> String) {
        while !done() {
            if step() != nil { continue }
            guard let next = nextEvent else {
                preconditionFailure(
                    "ManualDriver: \(what()) can never happen: no actor can run and nothing is due (after \(steps) steps, at \(now) of virtual time)"
                )
            }
            advance(by: max(.zero, next - now))
        }
    }

    /// An ask awaited on a manual system: outside a step (the test's own `await`), nothing
    /// else would run the actors, so this drives the system until the ask completes.
    func driveIfAwaitedOutsideAStep(_ ask: AskStateBase) {
        guard steppingThread.load(ordering: .relaxed) != UInt(pthread_self()) else { return }
        run(until: { ask.completed.load(ordering: .acquiring) }, what: "the answer to an awaited ask")
    }

    /// Virtual time since the system was made.
    public var now: Duration { .nanoseconds(system.timer.now) }

    /// When the next timer (or ask timeout, or delayed restart) is due, if any.
    public var nextDeadline: Duration? { system.timer.nextDeadline.map { .nanoseconds($0) } }

    /// Moves virtual time forward by `duration`, firing what falls due, earliest first; each
    /// firing makes its actor runnable (nothing runs until ``run(at:)``). Returns how many
    /// fired. A negative duration is a misuse (trap): virtual time only moves forward.
    @discardableResult
    public func advance(by duration: Duration) -> Int {
        requireValidUse(duration >= .zero, "ManualDriver.advance(by: \(duration)): virtual time only moves forward")
        let timer = system.timer
        return timer.advanceVirtualTime(to: MonotonicDeadline.after(duration.nanoseconds, from: timer.now))
    }

    /// Runs the first runnable actor until none is left (in order, without the schedule's
    /// choice): how shutdown drains a manual system. Returns the steps run.
    func drainInOrder(limit: Int = 10_000_000) -> Int {
        var ran = 0
        while ran < limit, run(at: 0) != nil { ran += 1 }
        return ran
    }
}

/// Decides which runnable actor a ``ManualDriver`` runs next.
public protocol ManualSchedule: Sendable {
    /// The index in `runnable` (actors in the order they became runnable) of the one to run at
    /// virtual time `now`, or nil to run none of them yet.
    func choose(among runnable: [ActorAddress], at now: Duration) -> Int?
    /// When an actor held back now will be released, if any (so that a driver with nothing to
    /// run knows how far to move virtual time).
    func nextRelease(after now: Duration) -> Duration?
}

/// The default schedule: the actor that became runnable first.
struct FirstRunnable: ManualSchedule {
    func choose(among runnable: [ActorAddress], at now: Duration) -> Int? { runnable.isEmpty ? nil : 0 }
    func nextRelease(after now: Duration) -> Duration? { nil }
}
