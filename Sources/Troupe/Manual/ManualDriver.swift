internal import TroupeLocks
import Synchronization
internal import CTroupe

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
/// Thread-safety: one caller at a time drives (the test's thread, or the thread that shuts the
/// system down); `runnable` is locked because senders on other threads (none in a deterministic
/// test, but a stray one must not corrupt it) add to the run queue it drains.
public final class ManualDriver: @unchecked Sendable {  // the system is set once before use; the rest is locked
    private let state = Locked<State>(State())
    /// The system, unretained: it holds the driver (through its configuration and its own
    /// property), so the driver never outlives it in use. Set once by the system's initialiser.
    private var systemReference: Unmanaged<ActorSystem>?
    private let buffer = EnvelopeBuffer.allocate(capacity: 1)
    private let progress = TurnProgress.makeProgressCounter()

    struct State {
        /// Runnable cells, in the order they became runnable; each entry carries its scheduling
        /// right (and a retain when `AnyCell.entryRetained` says so).
        var pending: [Unmanaged<AnyCell>] = []
        var steps = 0
    }

    public init() {}

    deinit {
        buffer.deallocate()
        progress.releaseProgressCounter()
        let pending = state.withLock { $0.pending }
        for entry in pending where entry.takeUnretainedValue().entryRetained { entry.release() }
    }

    /// Called once by the system's initialiser.
    func attach(_ system: ActorSystem) {
        precondition(
            systemReference == nil,
            "a ManualDriver drives one ActorSystem; make a new ManualDriver for each system")
        systemReference = Unmanaged.passUnretained(system)
    }

    private var system: ActorSystem {
        guard let systemReference else {
            preconditionFailure(
                "this ManualDriver is not attached to a system: pass it in ActorSystem.Configuration.manualDriver")
        }
        return systemReference.takeUnretainedValue()
    }

    /// Moves what was scheduled since the last look from the run queue to `pending`.
    private func collect() {
        let queue = system.scheduler.sharedWorkers[0]._withUnsafeGuaranteedRef { $0.runQueue }
        state.withLock { state in
            while let entry = Worker.pop(queue) { state.pending.append(entry) }
        }
    }

    /// The actors (and job lanes) with something to run, in the order they became runnable.
    public var runnable: [ActorAddress] {
        collect()
        return state.withLock { state in state.pending.map { $0.takeUnretainedValue().address } }
    }

    /// How many are runnable.
    public var runnableCount: Int {
        collect()
        return state.withLock { $0.pending.count }
    }

    /// Messages (or jobs) run so far.
    public var steps: Int { state.withLock { $0.steps } }

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
        public var description: String {
            "#\(number) \(actor)\(isSwiftJob ? " (Swift job)" : "") at \(time)"
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
            precondition(
                index >= 0 && index < state.pending.count,
                "ManualDriver.run(at: \(index)): only \(state.pending.count) actors are runnable")
            return state.pending.remove(at: index)
        }
        guard let entry else { return nil }
        // A strong reference for the turn; the entry's own retain, if any, goes now.
        let cell = entry.takeUnretainedValue()
        if cell.entryRetained { entry.release() }
        let number = state.withLock { state in
            state.steps += 1
            return state.steps
        }
        let more = cell.runTurn(buffer: buffer, limit: 1, progress: progress)
        if more {
            let again = cell.makeEntry()
            state.withLock { $0.pending.append(again) }
        }
        return Step(number: number, actor: cell.address, isSwiftJob: cell.isJobLane, time: now)
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
        precondition(duration >= .zero, "ManualDriver.advance(by: \(duration)): virtual time only moves forward")
        let timer = system.timer
        return timer.advanceVirtualTime(to: MonotonicDeadline.after(duration.nanoseconds, from: timer.now))
    }

    /// Runs the first runnable actor until none is left (in order, without choice): how
    /// shutdown drains a manual system. Returns the steps run.
    func drainInOrder(limit: Int = 10_000_000) -> Int {
        var ran = 0
        while ran < limit, run(at: 0) != nil { ran += 1 }
        return ran
    }
}
