import Synchronization

/// Observers of runtime events, for plugins, supervision and monitoring.
///
/// Thread-safety: register from any thread; observers run synchronously on the worker thread
/// where the event happens, so they must be quick and must not block. With no observer
/// registered an event costs one atomic load.
public final class SystemHooks: Sendable {
    private let stopped = Mutex<[@Sendable (ActorAddress) -> Void]>([])
    private let failed = Mutex<[@Sendable (ActorFailure, FailureDirective) -> Void]>([])
    private let any = Atomic<Bool>(false)

    init() {}

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

    func actorStopped(_ address: ActorAddress) {
        guard any.load(ordering: .acquiring) else { return }
        for observer in stopped.withLock({ $0 }) { observer(address) }
    }

    func actorFailed(_ failure: ActorFailure, _ directive: FailureDirective) {
        guard any.load(ordering: .acquiring) else { return }
        for observer in failed.withLock({ $0 }) { observer(failure, directive) }
    }
}
