import Synchronization

/// Resumes an actor suspended by a delayed restart. The actor's turn and the resumption race
/// (the delay can be zero-ish, and shutdown resumes early), so they meet through `handoff`:
/// 0 the suspending turn still runs, 1 it ended and left the cell parked, 2 resumed. Whoever
/// comes second reschedules (the timer) or keeps running (the turn). Exactly one does.
final class ResumeEntry: TimerEntry, @unchecked Sendable {  // `cell` is immutable; `handoff` is atomic
    let cell: AnyCell
    private let handoff = Atomic<UInt8>(0)

    init(cell: AnyCell) { self.cell = cell }

    /// Timer thread: the delay is over.
    override func fire() {
        guard cell.system.forgetSuspended(self) else { return }
        resumeNow()
    }

    /// Ends the pause; called once, by ``fire()`` or by shutdown (which cuts pauses short).
    func resumeNow() {
        if handoff.exchange(2, ordering: .acquiringAndReleasing) == 1 { cell.system.schedule(cell) }
    }

    /// The suspending turn ends: true when the resumption already came (keep running).
    func turnEnded() -> Bool {
        !handoff.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged
    }
}
