import Synchronization

/// A closure the system's timer runs once after a delay, unless cancelled first: see
/// ``ActorSystem/schedule(after:_:)``.
///
/// Thread-safety: ``cancel()`` may be called from any thread, any number of times; exactly one
/// of "the action ran" and "`cancel()` returned `true`" happens.
public final class ScheduledAction: Sendable {
    private let entry: ClosureTimerEntry

    init(entry: ClosureTimerEntry) { self.entry = entry }

    /// Prevents the action from running. Returns `false` if it already ran (or is running) or
    /// was cancelled before.
    @discardableResult
    public func cancel() -> Bool { entry.cancel() }

    /// Whether the action has neither run nor been cancelled.
    public var isPending: Bool { entry.isPending }
}

/// The timer entry behind a ``ScheduledAction``.
final class ClosureTimerEntry: TimerEntry, @unchecked Sendable {  // `state` is atomic; `action` is immutable
    private enum State: UInt8 {
        case pending, fired, cancelled
    }
    private let state = Atomic<UInt8>(State.pending.rawValue)
    private let action: @Sendable (_ atShutdown: Bool) -> Void
    /// Strong: the timer holds the entry only while it is pending, so the cycle ends when it
    /// fires, is cancelled or the timer stops.
    private let timer: DeadlineTimer

    init(timer: DeadlineTimer, action: @escaping @Sendable (_ atShutdown: Bool) -> Void) {
        self.timer = timer
        self.action = action
    }

    func cancel() -> Bool {
        let won = state.compareExchange(
            expected: State.pending.rawValue, desired: State.cancelled.rawValue, ordering: .acquiringAndReleasing
        ).exchanged
        if won { timer.cancel(self) }
        return won
    }

    var isPending: Bool { state.load(ordering: .acquiring) == State.pending.rawValue }

    /// Timer thread, outside the timer's lock.
    override func fire() { run(atShutdown: false) }

    /// The system shut down before the deadline: the action runs at once, on the shutting-down
    /// thread, told so, so that nothing waits for a deadline that will never come.
    override func fireAtShutdown() { run(atShutdown: true) }

    override var isDone: Bool { !isPending }

    private func run(atShutdown: Bool) {
        let won = state.compareExchange(
            expected: State.pending.rawValue, desired: State.fired.rawValue, ordering: .acquiringAndReleasing
        ).exchanged
        if won { action(atShutdown) }
    }
}

extension ActorSystem {
    /// Runs `action` once `delay` has passed on this system's clock (virtual time on a manual
    /// system), unless the returned ``ScheduledAction`` is cancelled first: for deadlines kept
    /// outside actors, such as a remote call's time limit. An actor uses
    /// ``ActorContext/startSingleTimer(key:message:after:)`` instead.
    ///
    /// `action` runs on the system's timer thread, which fires every deadline of the system:
    /// keep it short and never block in it (hand work to an actor or a task). If the system
    /// shuts down first, `action` runs during shutdown with `atShutdown` set to `true`; one
    /// scheduled after shutdown finished never runs. Any thread.
    @discardableResult
    public func schedule(
        after delay: Duration, _ action: @escaping @Sendable (_ atShutdown: Bool) -> Void
    ) -> ScheduledAction {
        let entry = ClosureTimerEntry(timer: timer, action: action)
        timer.schedule(entry, after: delay)
        return ScheduledAction(entry: entry)
    }
}
