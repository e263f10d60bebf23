/// System messages: they travel through the same mailbox as user messages (so they keep
/// their order relative to them) but bypass bounded-mailbox accounting and are never dropped.
enum SystemMessage {
    /// Stop after the messages enqueued before this one.
    case stop(TerminationReason)
    /// A child stopped; forget it.
    case childStopped(AnyCell)
    /// Makes an idle actor take a turn, so that a restart request (a lifecycle bit) is acted on.
    case wake
    /// An actor this one watches has terminated (the target's id).
    case watchedTerminated(Terminated, UInt64)
    /// One of this actor's timers is due.
    case timerFired(TimerEntry)
    /// A self-invalidating actor's last reference was dropped (maybe: refs can be re-created).
    case referencesReleased
    /// A tool asks an ``InspectableActor`` to describe itself (``ActorSystem/describeActor(id:timeout:)``).
    case describe(Reply<String>)
}
