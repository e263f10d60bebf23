internal import TroupeLocks
import Synchronization

/// Observers of runtime events, for plugins, supervision and monitoring.
///
/// Thread-safety: register from any thread; observers run synchronously on the worker thread
/// where the event happens, so they must be quick and must not block. With no observer
/// registered an event costs one atomic load.
public final class SystemHooks: Sendable {
    private let started = Locked<[@Sendable (ActorAddress) -> Void]>([])
    private let stopped = Locked<[@Sendable (ActorAddress) -> Void]>([])
    private let failed = Locked<[@Sendable (ActorFailure, FailureDirective) -> Void]>([])
    private let restarted = Locked<[@Sendable (ActorAddress, any Error) -> Void]>([])
    private let any = Atomic<Bool>(false)
    /// Separate from `any`, so that watching stops or failures does not make every spawn pay.
    private let anyStarted = Atomic<Bool>(false)
    /// The system's office, set once by the system right after it is created.
    private let deadLetterOffice = Locked<DeadLetterOffice?>(nil)

    init() {}

    /// Connects the dead-letter hook to the system's office; called once by ``ActorSystem``.
    func attach(deadLetters office: DeadLetterOffice) {
        deadLetterOffice.withLock { $0 = office }
    }

    /// Called on the actor's worker thread right after its `started` hook ran for the first
    /// time (not after restarts; see ``onActorFailed(_:)`` for those).
    public func onActorStarted(_ observer: @escaping @Sendable (ActorAddress) -> Void) {
        started.withLock { $0.append(observer) }
        anyStarted.store(true, ordering: .releasing)
    }

    /// Called after an actor's `stopped` hook ran.
    public func onActorStopped(_ observer: @escaping @Sendable (ActorAddress) -> Void) {
        stopped.withLock { $0.append(observer) }
        any.store(true, ordering: .releasing)
    }

    /// Called when a handler threw, with the directive that was decided.
    public func onActorFailed(_ observer: @escaping @Sendable (ActorFailure, FailureDirective) -> Void) {
        failed.withLock { $0.append(observer) }
        any.store(true, ordering: .releasing)
    }

    /// Called on the actor's worker thread after it was restarted (its fresh instance's
    /// `didRestart` ran), with the reason: the failure, or the reason of a requested restart.
    public func onActorRestarted(_ observer: @escaping @Sendable (ActorAddress, any Error) -> Void) {
        restarted.withLock { $0.append(observer) }
        any.store(true, ordering: .releasing)
    }

    /// Called for every later dead letter, on the thread that dead-letters it (a worker or a
    /// sender). The same stream as ``DeadLetterOffice/observe(_:)``; offered here so that a
    /// plugin finds every runtime event in one place.
    public func onDeadLetter(_ observer: @escaping @Sendable (DeadLetter) -> Void) {
        guard let office = deadLetterOffice.withLock({ $0 }) else {
            preconditionFailure("SystemHooks.onDeadLetter: hooks not attached to a system (internal error)")
        }
        office.observe(observer)
    }

    func actorStarted(_ address: ActorAddress) {
        guard anyStarted.load(ordering: .acquiring) else { return }
        for observer in started.withLock({ $0 }) { observer(address) }
    }

    func actorStopped(_ address: ActorAddress) {
        guard any.load(ordering: .acquiring) else { return }
        for observer in stopped.withLock({ $0 }) { observer(address) }
    }

    func actorRestarted(_ address: ActorAddress, _ reason: any Error) {
        guard any.load(ordering: .acquiring) else { return }
        for observer in restarted.withLock({ $0 }) { observer(address, reason) }
    }

    func actorFailed(_ failure: ActorFailure, _ directive: FailureDirective) {
        guard any.load(ordering: .acquiring) else { return }
        for observer in failed.withLock({ $0 }) { observer(failure, directive) }
    }
}
