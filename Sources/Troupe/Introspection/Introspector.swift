internal import TroupeLocks
import Synchronization
internal import CTroupe

/// A system's introspection state: its settings, its sampled histograms, the Swift executors'
/// job lanes it knows of, and its stuck-handler watchdog.
///
/// Thread-safety: the settings and histogram pointers are immutable after init; the histograms
/// are recorded into with atomic adds by any worker (`CTroupe_histogram_record`); `serialLanes`,
/// `sections` and `failures` are locked; `closed` is an atomic, so that ``close()`` runs once.
final class Introspector: @unchecked Sendable {  // see the thread-safety contract above
    /// The process-wide sampling this system asked for (0: none); see `CTroupe_sampling_begin`.
    let samplingInterval: UInt32
    let perActorHistograms: Bool
    let tracksMailboxDepths: Bool
    let timeInMailbox: OpaquePointer
    let handlerDuration: OpaquePointer
    /// `CTroupe_monotonic_ns` at creation, for the snapshot's uptime.
    let createdAt: Int64
    let watchdog: StuckHandlerWatchdog?
    /// Serial executors' lanes (the task executor's are reached through the system), from the
    /// executor's initialiser to its deinitialiser, which forgets its lane while it still holds
    /// it (so the entry never outlives the executor, and breaks the lane → system → here cycle).
    /// Not weak: a weak reference gives the lane a side table, and every retain and release of
    /// it (several per job an actor on the executor runs) then takes the runtime's slow path.
    private let serialLanes = Locked<[ObjectIdentifier: JobLane]>([:])
    private let closed = Atomic<Bool>(false)
    /// ``SnapshotSection`` providers, in the order they were first given.
    private let sections = Locked<[(key: AnyHashable, provider: @Sendable () -> SnapshotSection?)]>([])
    /// The last failures (``ActorSystem/recentFailures``), oldest first.
    private let failures = Locked<[RecentFailure]>([])

    init(_ settings: ActorSystem.Introspection) {
        samplingInterval = settings.normalizedSamplingInterval
        perActorHistograms = settings.perActorHistograms
        tracksMailboxDepths = settings.tracksMailboxDepths
        timeInMailbox = CTroupe_histogram_create()
        handlerDuration = CTroupe_histogram_create()
        createdAt = CTroupe_monotonic_ns()
        watchdog = settings.watchdogThresholdNanoseconds.map { StuckHandlerWatchdog(thresholdNanoseconds: $0) }
        if samplingInterval != 0 { CTroupe_sampling_begin(samplingInterval) }
    }

    /// The system has shut down: stop asking the process to sample. Once.
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if samplingInterval != 0 { CTroupe_sampling_end(samplingInterval) }
    }

    deinit {
        close()
        CTroupe_histogram_destroy(timeInMailbox)
        CTroupe_histogram_destroy(handlerDuration)
    }

    /// Keeps `failure` in time order, dropping the oldest beyond ``ActorSystem/recentFailureLimit``.
    ///
    /// A failing worker reads the clock before it takes this lock, so two workers can read it in
    /// one order and take the lock in the other: the failure goes back past any later one (at
    /// most a few places, as far as the workers race), so that the list stays oldest first.
    func record(_ failure: RecentFailure) {
        failures.withLock { failures in
            var index = failures.endIndex
            while index > failures.startIndex && failures[index - 1].at > failure.at { index -= 1 }
            failures.insert(failure, at: index)
            if failures.count > ActorSystem.recentFailureLimit { failures.removeFirst() }
        }
    }

    var recentFailures: [RecentFailure] { failures.withLock { $0 } }

    func register(serialLane lane: JobLane) {
        serialLanes.withLock { $0[ObjectIdentifier(lane)] = lane }
    }

    func forget(serialLane lane: JobLane) {
        serialLanes.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(lane)) }
    }

    func provideSection(key: AnyHashable, _ provider: @escaping @Sendable () -> SnapshotSection?) {
        sections.withLock { sections in
            if let index = sections.firstIndex(where: { $0.key == key }) {
                sections[index].provider = provider
            } else {
                sections.append((key, provider))
            }
        }
    }

    /// The providers now (called outside the lock: a provider may take locks of its own).
    var sectionProviders: [(key: AnyHashable, provider: @Sendable () -> SnapshotSection?)] {
        sections.withLock { $0 }
    }

    func dropSections(_ keys: [AnyHashable]) {
        guard !keys.isEmpty else { return }
        sections.withLock { sections in sections.removeAll { keys.contains($0.key) } }
    }

    /// The serial executors' lanes that still exist.
    var liveSerialLanes: [JobLane] {
        serialLanes.withLock { lanes in Array(lanes.values) }
    }
}

/// A cell's own sampled histograms (``ActorSystem/Introspection/perActorHistograms``), made on
/// its first sampled message by the holder of its scheduling right and freed with the cell.
final class CellHistograms {
    let timeInMailbox = CTroupe_histogram_create()!
    let handlerDuration = CTroupe_histogram_create()!

    deinit {
        CTroupe_histogram_destroy(timeInMailbox)
        CTroupe_histogram_destroy(handlerDuration)
    }
}
