import Synchronization
internal import CTroupe

/// A timer of one actor: delivers `message` to it after a delay, once or periodically.
final class ActorTimer<Message: Sendable>: TimerEntry, @unchecked Sendable {  // atomics; `deadline` is DeadlineTimer's
    let key: TimerKey
    let message: Message
    /// Nanoseconds between ticks; 0 for a single timer.
    let interval: Int64
    let cell: AnyCell
    let cancelled = Atomic<Bool>(false)
    /// A tick is in the mailbox and not yet handled: further ticks are skipped rather than piled up.
    let inFlight = Atomic<Bool>(false)

    init(key: TimerKey, message: Message, interval: Int64, cell: AnyCell) {
        self.key = key
        self.message = message
        self.interval = interval
        self.cell = cell
    }

    /// Timer thread, outside the timer's lock.
    override func fire() {
        guard !cancelled.load(ordering: .acquiring) else { return }
        if !inFlight.exchange(true, ordering: .acquiringAndReleasing) {
            cell.sendSystem(.timerFired(self))
        }
        if interval > 0 {
            // Fixed rate: the next tick is due one interval after this one was, not after now.
            let now = cell.system.timer.now
            var next = MonotonicDeadline.after(interval, from: deadline)
            if next <= now { next = MonotonicDeadline.after(interval, from: now) }
            cell.system.timer.schedule(self, atNanoseconds: next)
        }
    }

    /// Actors stop (cancelling their timers) before the timer thread does.
    override func fireAtShutdown() {}
}
