internal import TroupeLocks
import Synchronization

/// Observers of runtime events, for plugins, supervision and monitoring.
///
/// Thread-safety: register from any thread; observers run synchronously on the worker thread
/// where the event happens, so they must be quick and must not block. With no observer
/// registered an event costs one atomic load. Observers can be removed (the returned
/// ``Observation``), and all are dropped when the system has shut down.
public final class SystemHooks: Sendable {
    private let started = ObserverList<@Sendable (ActorAddress) -> Void>()
    private let stopped = ObserverList<@Sendable (ActorAddress) -> Void>()
    private let failed = ObserverList<@Sendable (ActorFailure, FailureDirective) -> Void>()
    private let restarted = ObserverList<@Sendable (ActorAddress, any Error) -> Void>()
    private let stuck = ObserverList<@Sendable (StuckHandler) -> Void>()
    private let timed = ObserverList<@Sendable (MessageTiming) -> Void>()
    /// The system's office, set once by the system right after it is created.
    private let deadLetterOffice = Locked<DeadLetterOffice?>(nil)

    init() {}

    /// Connects the dead-letter hook to the system's office; called once by ``ActorSystem``.
    func attach(deadLetters office: DeadLetterOffice) {
        deadLetterOffice.withLock { $0 = office }
    }

    /// Called on the actor's worker thread right after its `started` hook ran for the first
    /// time (not after restarts; see ``onActorRestarted(_:)`` for those). Every `on…` method
    /// returns an ``Observation`` that removes the observer; all are dropped at shutdown.
    @discardableResult
    public func onActorStarted(_ observer: @escaping @Sendable (ActorAddress) -> Void) -> Observation {
        started.add(observer)
    }

    /// Called after an actor's `stopped` hook ran.
    @discardableResult
    public func onActorStopped(_ observer: @escaping @Sendable (ActorAddress) -> Void) -> Observation {
        stopped.add(observer)
    }

    /// Called when a handler threw, with the directive that was decided.
    @discardableResult
    public func onActorFailed(_ observer: @escaping @Sendable (ActorFailure, FailureDirective) -> Void) -> Observation {
        failed.add(observer)
    }

    /// Called on the actor's worker thread after it was restarted (its fresh instance's
    /// `didRestart` ran), with the reason: the failure, or the reason of a requested restart.
    @discardableResult
    public func onActorRestarted(_ observer: @escaping @Sendable (ActorAddress, any Error) -> Void) -> Observation {
        restarted.add(observer)
    }

    /// Called on the system's timer thread when the stuck-handler watchdog finds a handler
    /// running past its threshold (``StuckHandler/Phase-swift.enum/running``), and again when
    /// that handler has ended (``StuckHandler/Phase-swift.enum/finished``). See
    /// ``ActorSystem/Introspection/stuckHandlerThreshold``.
    @discardableResult
    public func onStuckHandler(_ observer: @escaping @Sendable (StuckHandler) -> Void) -> Observation {
        stuck.add(observer)
    }

    /// Called on the worker thread after each sampled message's handler (one message in
    /// ``ActorSystem/Introspection/samplingInterval``), with its time in the mailbox and its
    /// handler's duration: where a metrics backend records its timers.
    @discardableResult
    public func onMessageTimed(_ observer: @escaping @Sendable (MessageTiming) -> Void) -> Observation {
        timed.add(observer)
    }

    /// Called for every later dead letter, on the thread that dead-letters it (a worker or a
    /// sender). The same stream as ``DeadLetterOffice/observe(_:)``; offered here so that a
    /// plugin finds every runtime event in one place.
    @discardableResult
    public func onDeadLetter(_ observer: @escaping @Sendable (DeadLetter) -> Void) -> Observation {
        guard let office = deadLetterOffice.withLock({ $0 }) else {
            fatalError("SystemHooks.onDeadLetter: hooks not attached to a system (internal error)")
        }
        return office.observe(observer)
    }

    /// The system has shut down: drop every observer, and keep none registered later (observers
    /// often capture the system; the returned `Observation` is then already cancelled).
    func removeAll() {
        started.close()
        stopped.close()
        failed.close()
        restarted.close()
        stuck.close()
        timed.close()
    }

    func stuckHandler(_ report: StuckHandler) {
        stuck.forEach { $0(report) }
    }

    func messageTimed(_ actor: @autoclosure () -> ActorAddress, timeInMailbox: Duration, handlerDuration: Duration) {
        guard !timed.isEmpty else { return }
        let timing = MessageTiming(actor: actor(), timeInMailbox: timeInMailbox, handlerDuration: handlerDuration)
        timed.forEach { $0(timing) }
    }

    func actorStarted(_ address: ActorAddress) {
        started.forEach { $0(address) }
    }

    func actorStopped(_ address: ActorAddress) {
        stopped.forEach { $0(address) }
    }

    func actorRestarted(_ address: ActorAddress, _ reason: any Error) {
        restarted.forEach { $0(address, reason) }
    }

    func actorFailed(_ failure: ActorFailure, _ directive: FailureDirective) {
        failed.forEach { $0(failure, directive) }
    }
}
