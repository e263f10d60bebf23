import Synchronization
import Troupe

/// Per-system counters of ``PromiseEvent``s (all promises of the process, counted from the
/// moment the metrics were created, that is when ``PromisesPlugin`` was installed).
public final class PromiseMetrics: Sendable {
    private let counters = Counters()
    private let observation: Observation

    public init() {
        let counters = self.counters
        observation = PromiseDiagnostics.addObserver { counters.record($0) }
    }

    deinit { observation.cancel() }

    public var doubleCompletions: Int { counters.doubles.load(ordering: .relaxed) }
    public var abandoned: Int { counters.abandons.load(ordering: .relaxed) }
    public var droppedActorCallbacks: Int { counters.dropped.load(ordering: .relaxed) }

    /// The counts, in an object of their own so that the observer does not hold the metrics.
    private final class Counters: Sendable {
        let doubles = Atomic<Int>(0)
        let abandons = Atomic<Int>(0)
        let dropped = Atomic<Int>(0)

        func record(_ event: PromiseEvent) {
            switch event {
            case .doubleCompletion: doubles.add(1, ordering: .relaxed)
            case .abandoned: abandons.add(1, ordering: .relaxed)
            case .droppedActorCallback: dropped.add(1, ordering: .relaxed)
            }
        }
    }
}
