#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Troupe
import TroupePersistence

/// Durable reminders for the entities of one kind: named timers per entity, kept in a
/// `ReminderStore` of TroupePersistence (SQLite, PostgreSQL), that wake the entity when due —
/// activating it if it was passivated, and after the process restarted.
///
/// ```swift
/// let store = try await SQLiteStore.open(path: "carts.sqlite")
/// let reminders = EntityReminders(region: carts, store: store) { tick in .expire(tick) }
/// try await reminders.register("expire", for: "user-42", after: .seconds(30 * 60))
/// try await reminders.register("report", for: "user-42", after: .seconds(60), every: .seconds(3600))
/// ```
///
/// A reminder is stored before ``register(_:for:after:every:)`` returns. Each node that runs an
/// `EntityReminders` of the kind reads the reminders due soon every ``pollInterval`` and, at a
/// tick's due time, **claims** the tick in the store (a conditional write: moves a periodic
/// reminder to its next due time, removes a one-shot) and then tells the entity the message
/// `tick` makes of it. So:
///
/// - a tick is delivered at most once, also when several nodes share the store;
/// - a tick is lost only if the node that claimed it crashes before the entity handles it (a
///   periodic reminder goes on at its next tick);
/// - ticks missed while no node ran (a restart) are not replayed one by one: one tick is
///   delivered, with the earliest missed due time, and the next comes on the period's grid;
/// - a tick comes at its due time plus the time to claim it (one write), on a node that has read
///   it: a reminder registered on another node is read by this one within ``pollInterval``.
///
/// Timers that need not survive a restart belong on the actor (`ActorContext.startSingleTimer`):
/// they cost no write per tick.
public final class EntityReminders: Sendable {
    /// The shortest period accepted: every tick is one write to the store.
    public static let minimumPeriod: Duration = .milliseconds(100)
    /// The longest delay or period accepted (about a hundred years).
    public static let maximumDelay: Duration = .seconds(100 * 366 * 86_400)
    /// The longest name accepted, in bytes of UTF-8.
    public static let maximumNameLength = 200
    /// The shortest and the longest `pollInterval` accepted: every poll is a read of the store,
    /// and a reminder registered on another node may wait a poll before this one sees it.
    public static let pollIntervals: ClosedRange<Duration> = .milliseconds(10) ... .seconds(86_400)

    /// The kind (the region's name) whose reminders these are.
    public let kind: String
    public let store: any ReminderStore
    /// How often the store is read for reminders due soon.
    public let pollInterval: Duration

    private let scheduler: ActorRef<ReminderScheduler.Message>
    private let counters: ReminderCounters
    private let now: @Sendable () -> Int64
    private let isStopped = Atomic<Bool>(false)

    /// Reminders for the entities of `region`, stored in `store`; `tick` makes the message a
    /// due tick sends the entity. `pollInterval` is within ``pollIntervals``, 10 ms to a day
    /// (another stops the program with a message saying so, as the core's checks of misuse do).
    public convenience init<Message: Sendable>(
        region: EntityRegion<Message>, store: any ReminderStore, pollInterval: Duration = .seconds(1),
        tick: @escaping @Sendable (ReminderTick) -> Message
    ) {
        self.init(
            system: region.system, kind: region.name, store: store, pollInterval: pollInterval, owns: { _ in true },
            deliver: { region.entity($0.key).tell(tick($0)) })
    }

    /// Reminders whose ticks `deliver` hands on, fired on this node for the keys `owns` accepts
    /// (what TroupeClusterEntities builds on).
    package init(
        system: ActorSystem, kind: String, store: any ReminderStore, pollInterval: Duration,
        owns: @escaping @Sendable (String) -> Bool, deliver: @escaping @Sendable (ReminderTick) -> TellOutcome,
        now: @escaping @Sendable () -> Int64 = EntityReminders.wallClockMilliseconds
    ) {
        requireValidReminderUse(
            Self.pollIntervals.contains(pollInterval),
            "EntityReminders: pollInterval must be at least 10 ms and at most a day (86,400 s), not \(pollInterval)")
        let counters = ReminderCounters()
        self.kind = kind
        self.store = store
        self.pollInterval = pollInterval
        self.counters = counters
        self.now = now
        self.scheduler = system.spawn(
            ReminderScheduler(
                configuration: ReminderSchedulerConfiguration(
                    kind: kind, store: store, pollInterval: pollInterval, pageSize: 1000, claimsInFlight: 512,
                    claimBatch: 256,
                    owns: owns, deliver: deliver, now: now, counters: counters)),
            options: SpawnOptions(name: "reminders-\(kind)"))
        system.provideSnapshotSection(key: SectionKey(kind: kind, counters: ObjectIdentifier(counters))) {
            [weak counters] in
            counters.map { SnapshotSection(kind: "entity_reminders", instance: kind, values: $0.statistics.section) }
        }
    }

    /// Stores the reminder `name` of the entity `key`: its first tick after `delay`, then one
    /// every `period` (nil: once). Replaces a reminder of the same name. Throws
    /// ``ReminderError`` for a bad name or timing, and what the store throws (then nothing
    /// changed).
    @discardableResult
    public func register(
        _ name: String, for key: String, after delay: Duration, every period: Duration? = nil
    )
        async throws -> StoredReminder
    {
        try checkRunning()
        guard !name.isEmpty else { throw ReminderError.invalidName("the name is empty") }
        guard name.utf8.count <= Self.maximumNameLength else {
            throw ReminderError.invalidName(
                "\(name.utf8.count) bytes of UTF-8; at most \(Self.maximumNameLength)")
        }
        guard delay >= .zero else { throw ReminderError.invalidTiming("the delay \(delay) is negative") }
        guard delay <= Self.maximumDelay else {
            throw ReminderError.invalidTiming("the delay \(delay) is longer than \(Self.maximumDelay)")
        }
        if let period {
            guard period >= Self.minimumPeriod else {
                throw ReminderError.invalidTiming(
                    "the period \(period) is shorter than \(Self.minimumPeriod) (every tick is a write to the store)")
            }
            guard period <= Self.maximumDelay else {
                throw ReminderError.invalidTiming("the period \(period) is longer than \(Self.maximumDelay)")
            }
        }
        let reminder = StoredReminder(
            kind: kind, key: key, name: name, dueAt: now() + ReminderScheduler.milliseconds(delay),
            periodMilliseconds: period.map(ReminderScheduler.milliseconds) ?? 0)
        try await store.saveReminder(reminder)
        scheduler.tell(.registered(reminder))
        return reminder
    }

    /// Removes the reminder `name` of the entity `key`; true if there was one. A tick already
    /// claimed may still arrive.
    @discardableResult
    public func unregister(_ name: String, for key: String) async throws -> Bool {
        try checkRunning()
        let removed = try await store.removeReminder(kind: kind, key: key, name: name)
        scheduler.tell(.unregistered(ReminderScheduler.ReminderRow(key: key, name: name)))
        return removed
    }

    /// The reminders of the entity `key`, by name, as stored.
    public func reminders(for key: String) async throws -> [StoredReminder] {
        try await store.reminders(of: kind, key: key)
    }

    /// What this node's reminders did since they started.
    public var statistics: EntityReminderStatistics { counters.statistics }

    /// Stops scheduling here (the reminders stay stored; another `EntityReminders` of the kind
    /// fires them). Later registrations throw ``ReminderError/stopped``.
    public func stop() {
        guard !isStopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        scheduler.stop()
    }

    private func checkRunning() throws(ReminderError) {
        if isStopped.load(ordering: .acquiring) { throw .stopped }
    }

    /// The wall clock in milliseconds since 1970 (UTC).
    @Sendable package static func wallClockMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    private struct SectionKey: Hashable, Sendable {
        let kind: String
        let counters: ObjectIdentifier
    }
}

/// A misuse of the API: stops with the message in every build (as the core's checks do).
func requireValidReminderUse(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}
