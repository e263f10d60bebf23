import Synchronization
import Troupe

/// Something about promises worth knowing that is not an outcome.
public enum PromiseEvent: Sendable, Hashable {
    /// A completion of an already completed promise was discarded (it returned `false`).
    case doubleCompletion(valueType: String)
    /// A pending promise was released; its callbacks ran with ``PromiseError/abandoned``.
    case abandoned(valueType: String)
    /// A callback for an actor (``Promise/then(on:as:_:)`` and friends) never ran because its
    /// message could not be handled (the actor stopped, or has no
    /// `MessageHandlers.acceptPromiseCallbacks()`).
    case droppedActorCallback(actorType: String)
}

/// Process-wide counters of ``PromiseEvent``s, and observers of them (``PromisesPlugin`` adds
/// one per system). Recording costs one atomic increment plus one atomic load when nobody
/// observes; observers run synchronously on the thread where the event happened.
public enum PromiseDiagnostics {
    private static let doubleCompletionCount = Atomic<Int>(0)
    private static let abandonedCount = Atomic<Int>(0)
    private static let droppedCount = Atomic<Int>(0)
    private static let observers = ObserverList<@Sendable (PromiseEvent) -> Void>()

    /// Discarded second (or later) completions since the process started.
    public static var doubleCompletions: Int { doubleCompletionCount.load(ordering: .relaxed) }
    /// Promises released while pending since the process started.
    public static var abandoned: Int { abandonedCount.load(ordering: .relaxed) }
    /// Actor-delivered callbacks that never ran since the process started.
    public static var droppedActorCallbacks: Int { droppedCount.load(ordering: .relaxed) }

    /// Adds an observer of every event, called synchronously on the thread where the event
    /// happened; the returned token removes it (`Observation.cancel()`).
    @discardableResult
    public static func addObserver(_ observer: @escaping @Sendable (PromiseEvent) -> Void) -> Observation {
        observers.add(observer)
    }

    static func recordDoubleCompletion(_ type: Any.Type) {
        doubleCompletionCount.add(1, ordering: .relaxed)
        notify { .doubleCompletion(valueType: "\(type)") }
    }

    static func recordAbandoned(_ type: Any.Type) {
        abandonedCount.add(1, ordering: .relaxed)
        notify { .abandoned(valueType: "\(type)") }
    }

    static func recordDroppedActorCallback(_ type: Any.Type) {
        droppedCount.add(1, ordering: .relaxed)
        notify { .droppedActorCallback(actorType: "\(type)") }
    }

    private static func notify(_ event: () -> PromiseEvent) {
        guard !observers.isEmpty else { return }
        let value = event()
        observers.forEach { $0(value) }
    }
}
