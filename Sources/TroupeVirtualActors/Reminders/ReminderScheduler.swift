import Synchronization
import Troupe
import TroupePersistence

/// The counters an ``EntityReminders`` reads while its scheduler writes them.
final class ReminderCounters: Sendable {
    let delivered = Atomic<Int>(0)
    let claimedElsewhere = Atomic<Int>(0)
    let undelivered = Atomic<Int>(0)
    let storeFailures = Atomic<Int>(0)
    let pending = Atomic<Int>(0)
    let reads = Atomic<Int>(0)

    // Relaxed: counters read for statistics, ordering nothing else.
    var statistics: EntityReminderStatistics {
        EntityReminderStatistics(
            delivered: delivered.load(ordering: .relaxed), claimedElsewhere: claimedElsewhere.load(ordering: .relaxed),
            undelivered: undelivered.load(ordering: .relaxed), storeFailures: storeFailures.load(ordering: .relaxed),
            pending: pending.load(ordering: .relaxed), reads: reads.load(ordering: .relaxed))
    }
}

/// What the scheduler needs from its kind: where reminders are stored, which keys this node
/// fires, how a tick reaches its entity, and the wall clock.
struct ReminderSchedulerConfiguration: Sendable {
    let kind: String
    let store: any ReminderStore
    let pollInterval: Duration
    /// The most due reminders one poll reads; a full page polls again at once.
    let pageSize: Int
    /// The most claims in flight at once, and in one call to the store.
    let claimsInFlight: Int
    let claimBatch: Int
    /// Whether this node fires `key`'s reminders (a cluster: whether it owns the key now).
    let owns: @Sendable (String) -> Bool
    let deliver: @Sendable (ReminderTick) -> TellOutcome
    let now: @Sendable () -> Int64
    let counters: ReminderCounters
}

/// The actor that schedules one kind's reminders on this node. Every `pollInterval` it reads
/// the reminders due before the next poll (and a little after), keeps them in memory, and at
/// each one's due time claims the tick in the store and, once claimed, tells the entity.
///
/// A tick is claimed before it is delivered: of several nodes holding the same due reminder
/// (an old view of who owns the key, a poll before another node's claim), the store lets one
/// claim it. A tick is lost only if its node crashes between the claim and the entity's turn.
struct ReminderScheduler: ActorDefinition {
    enum Message: Sendable {
        case poll
        case wake
        case loaded(Result<[StoredReminder], any Error>)
        case claimed([ReminderClaim], Result<[Bool], any Error>)
        case registered(StoredReminder)
        case unregistered(ReminderRow)
    }

    /// A reminder's identity among its kind's.
    struct ReminderRow: Hashable, Sendable {
        let key: String
        let name: String
        init(_ reminder: StoredReminder) { (key, name) = (reminder.key, reminder.name) }
        init(key: String, name: String) { (self.key, self.name) = (key, name) }
    }

    let configuration: ReminderSchedulerConfiguration
    /// The reminders due within the window, not yet claimed.
    var pending: [ReminderRow: StoredReminder] = [:]
    /// The reminders whose claim is in flight (never claimed twice at once).
    var claiming: Set<ReminderRow> = []
    var loading = false
    /// After a full page: the last due time it read. Once everything due by then is claimed, the
    /// next page is read at once rather than at the next poll (a backlog, or a burst due at one
    /// moment). Not sooner: a page re-read before its reminders are claimed is the same page.
    var backlogAfter: Int64?
    /// The ticks this node claimed while a read was in flight (by reminder, the due time
    /// claimed): that read may still return them as they were before the claim.
    var claimedDuringRead: [ReminderRow: Int64] = [:]
    /// The due time the wake timer is set for (nil: none set).
    var wakeAt: Int64?

    init(configuration: ReminderSchedulerConfiguration) { self.configuration = configuration }

    var pollMilliseconds: Int64 { Self.milliseconds(configuration.pollInterval) }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    mutating func started(context: ActorContext<Message>) {
        context.startPeriodicTimer(key: "poll", message: .poll, every: configuration.pollInterval, initialDelay: .zero)
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .poll:
            poll(context: context)
        case .wake:
            wakeAt = nil
        case .loaded(.success(let reminders)):
            loading = false
            for reminder in reminders {
                let row = ReminderRow(reminder)
                guard !claiming.contains(row), claimedDuringRead[row] != reminder.dueAt else { continue }
                pending[row] = reminder
            }
            claimedDuringRead = [:]
            backlogAfter = reminders.count == configuration.pageSize ? reminders.last?.dueAt : nil
        case .loaded(.failure(let error)):
            loading = false
            claimedDuringRead = [:]
            configuration.counters.storeFailures.add(1, ordering: .relaxed)
            context.logger.warning(
                "reminders of '\(configuration.kind)': reading due reminders failed; retrying at the next poll: \(error)"
            )
        case .claimed(let claims, .success(let won)):
            for (claim, won) in zip(claims, won) { claimed(claim, won: won) }
            if won.count < claims.count {
                // A store that broke `claimTicks`' contract (one answer per claim): the claims
                // it did not answer are treated as failed, so the next poll reads them again
                // rather than leaving them in `claiming` for good.
                for claim in claims[won.count...] { claiming.remove(ReminderRow(claim.reminder)) }
                configuration.counters.storeFailures.add(1, ordering: .relaxed)
                context.logger.error(
                    "reminders of '\(configuration.kind)': the store answered \(won.count) of \(claims.count) claims (claimTicks must answer each); the others are retried at the next poll"
                )
            }
        case .claimed(let claims, .failure(let error)):
            // Not claimed: the next poll reads them again (they are still due).
            for claim in claims { claiming.remove(ReminderRow(claim.reminder)) }
            configuration.counters.storeFailures.add(1, ordering: .relaxed)
            context.logger.warning(
                "reminders of '\(configuration.kind)': claiming \(claims.count) ticks failed; retrying at the next poll: \(error)"
            )
        case .registered(let reminder):
            if reminder.dueAt <= configuration.now() + 2 * pollMilliseconds, !claiming.contains(ReminderRow(reminder)) {
                pending[ReminderRow(reminder)] = reminder
            }
        case .unregistered(let row):
            pending[row] = nil
        }
        fireDue(context: context)
    }

    mutating func poll(context: ActorContext<Message>) {
        guard !loading else { return }
        loading = true
        configuration.counters.reads.add(1, ordering: .relaxed)
        let (store, kind, dueBy, limit) = (
            configuration.store, configuration.kind, configuration.now() + 2 * pollMilliseconds, configuration.pageSize
        )
        context.run({ try await store.reminders(of: kind, dueBy: dueBy, limit: limit) }, then: { .loaded($0) })
    }

    mutating func claimed(_ claim: ReminderClaim, won: Bool) {
        let (reminder, row) = (claim.reminder, ReminderRow(claim.reminder))
        claiming.remove(row)
        guard won else {
            configuration.counters.claimedElsewhere.add(1, ordering: .relaxed)
            return
        }
        if loading { claimedDuringRead[row] = reminder.dueAt }
        if configuration.deliver(ReminderTick(reminder)).isEnqueued {
            configuration.counters.delivered.add(1, ordering: .relaxed)
        } else {
            configuration.counters.undelivered.add(1, ordering: .relaxed)
        }
        // The next tick, if it is due before the next poll would read it, and nothing newer (a
        // registration while the claim was in flight) replaced it.
        if let next = claim.next, pending[row] == nil, next <= configuration.now() + 2 * pollMilliseconds {
            var following = reminder
            following.dueAt = next
            pending[row] = following
        }
    }

    /// Claims what is due (up to the in-flight limit), and sets the wake timer for the earliest
    /// reminder still pending.
    mutating func fireDue(context: ActorContext<Message>) {
        let now = configuration.now()
        let due = pending.values.filter { $0.dueAt <= now }.sorted { $0.dueAt < $1.dueAt }
        var batch: [ReminderClaim] = []
        for reminder in due {
            guard claiming.count < configuration.claimsInFlight else { break }
            let row = ReminderRow(reminder)
            pending[row] = nil
            // Another node owns the key now: it fires the reminder (this node reads it again if
            // the key comes back to it).
            guard configuration.owns(reminder.key) else { continue }
            claiming.insert(row)
            batch.append(ReminderClaim(reminder, next: Self.nextDue(after: reminder, now: now)))
            if batch.count == configuration.claimBatch {
                claim(batch, context: context)
                batch = []
            }
        }
        if !batch.isEmpty { claim(batch, context: context) }
        configuration.counters.pending.store(pending.count, ordering: .relaxed)
        if let after = backlogAfter, now >= after, claiming.isEmpty,
            !pending.values.contains(where: { $0.dueAt <= now })
        {
            backlogAfter = nil
            poll(context: context)
        }
        guard let earliest = pending.values.map(\.dueAt).min(), claiming.count < configuration.claimsInFlight else {
            return
        }
        if wakeAt.map({ earliest < $0 }) ?? true {
            wakeAt = earliest
            context.startSingleTimer(key: "wake", message: .wake, after: .milliseconds(max(0, earliest - now)))
        }
    }

    /// Claims `batch` in the store in one call; the answer comes back as a message.
    func claim(_ batch: [ReminderClaim], context: ActorContext<Message>) {
        let store = configuration.store
        context.run({ try await store.claimTicks(batch) }, then: { .claimed(batch, $0) })
    }

    /// The tick after `reminder`'s: the period's first due time after `now` (missed ticks are
    /// skipped), or nil for a one-shot.
    static func nextDue(after reminder: StoredReminder, now: Int64) -> Int64? {
        let period = reminder.periodMilliseconds
        guard period > 0 else { return nil }
        let missed = max(0, (now - reminder.dueAt) / period)
        return reminder.dueAt + (missed + 1) * period
    }
}
