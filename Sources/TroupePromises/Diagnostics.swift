internal import TroupeLocks
import Synchronization

/// Something about promises worth knowing that is not an outcome.
public enum PromiseEvent: Sendable, Hashable {
    /// A completion of an already completed promise was discarded (it returned `false`).
    case doubleCompletion(valueType: String)
    /// A pending promise was released; its callbacks ran with ``PromiseError/abandoned``.
    case abandoned(valueType: String)
    /// A callback for an actor (``Promise/then(on:as:_:)`` and friends) never ran because its
    /// message could not be handled (the actor stopped, or has no ``MessageHandlers/acceptPromiseCallbacks()``).
    case droppedActorCallback(actorType: String)
}

/// Process-wide counters of ``PromiseEvent``s, and observers of them (``PromisesPlugin`` adds
/// one per system). Recording costs one atomic increment plus one atomic load when nobody
/// observes; observers run synchronously on the thread where the event happened.
public enum PromiseDiagnostics {
    private static let doubleCompletionCount = Atomic<Int>(0)
    private static let abandonedCount = Atomic<Int>(0)
    private static let droppedCount = Atomic<Int>(0)
    private static let observerCount = Atomic<Int>(0)
    /// The project's one lock (TSan sees pthread mutexes; `Synchronization.Mutex` is invisible to it on Linux).
    private static let observers = Locked<(next: UInt64, all: [UInt64: @Sendable (PromiseEvent) -> Void])>((0, [:]))

    /// Discarded second (or later) completions since the process started.
    public static var doubleCompletions: Int { doubleCompletionCount.load(ordering: .relaxed) }
    /// Promises released while pending since the process started.
    public static var abandoned: Int { abandonedCount.load(ordering: .relaxed) }
    /// Actor-delivered callbacks that never ran since the process started.
    public static var droppedActorCallbacks: Int { droppedCount.load(ordering: .relaxed) }

    /// Adds an observer of every event; returns a token for ``removeObserver(_:)``.
    @discardableResult
    public static func addObserver(_ observer: @escaping @Sendable (PromiseEvent) -> Void) -> UInt64 {
        observers.withLock { state in
            state.next += 1
            state.all[state.next] = observer
            observerCount.add(1, ordering: .releasing)
            return state.next
        }
    }

    /// Removes an observer; returns whether it was registered.
    @discardableResult
    public static func removeObserver(_ token: UInt64) -> Bool {
        observers.withLock { state in
            guard state.all.removeValue(forKey: token) != nil else { return false }
            observerCount.subtract(1, ordering: .releasing)
            return true
        }
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
        guard observerCount.load(ordering: .acquiring) > 0 else { return }
        let current = observers.withLock { Array($0.all.values) }
        let value = event()
        for observer in current { observer(value) }
    }
}
