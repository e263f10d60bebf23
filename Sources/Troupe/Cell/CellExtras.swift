internal import CTroupe

/// Rare per-actor state, allocated on first use: family links, failures, watches, timers,
/// a pending delayed restart. Touched only by the holder of the mailbox's scheduling right,
/// except `stopReason`, which is written before the cell leaves the live-actor list and read by
/// watchers only after that (under the system's `liveActors` lock).
final class CellExtras {
    /// Held strongly while the child lives: a weak reference would give every parent cell a
    /// side table, and each retain or release of a parent (its ref travels in messages) would
    /// then take the runtime's slow path (a parent–child PingPong round trip: 1,423 instructions
    /// and 18 locked operations with the weak link, 1,293 and 14 with this one). The cycle with
    /// the parent's `children` is broken when the child stops (`stopNow`), and at once for a
    /// child spawned during shutdown (`ActorSystem.start`); every live actor stops before its
    /// system finishes shutting down.
    var parent: AnyCell?
    var children: [ObjectIdentifier: AnyCell] = [:]
    var failureCount = 0
    /// Why the actor stopped, when it was not a plain stop.
    var stopReason: TerminationReason?
    /// Set by ``ActorContext/crash(_:)``; acted on when the handler returns.
    var pendingCrash: (any Error)?
    /// Actors this one watches, by id: the target and its notice mapping (a `NoticeMapping<Message>`).
    var watching: [UInt64: (target: AnyCell, mapping: AnyObject)] = [:]
    /// Active timers by key (`ActorTimer<Message>`).
    var timers: [TimerKey: TimerEntry] = [:]
    /// A delayed restart in progress: the reason and the timer entry that resumes the actor.
    var suspension: (reason: any Error, resume: ResumeEntry)?
    /// Envelopes popped in the turn that suspended the actor and not handled yet; handled
    /// first when it resumes.
    var held: [UnsafeMutablePointer<CTroupe_envelope>] = []
    /// The failing message (a `Message`) and its ask token, kept for one retry after a restart.
    var retry: (message: Any, token: AskToken?)?
}
