import Foundation
import Testing
import Troupe
import TroupePersistence
import TroupePersistenceSQLite
import TroupeTestSupport
import TroupeVirtualActors

/// Durable reminders: stored before `register` returns, fired by claiming each tick in the
/// store first, waking a passivated entity, and surviving a restart of the process.
@Suite struct EntityRemindersTests {
    @Test func aOneShotReminderActivatesAPassivatedEntityAndIsRemovedByItsTick() async throws {
        let store = InMemoryStore()
        try await withTestSystem { system in
            let log = AlarmLog()
            let region = try alarms(system, log: log)
            let reminders = EntityReminders(region: region, store: store, pollInterval: .milliseconds(50)) { .tick($0) }
            region.entity("cart-1").tell(.ping)
            await waitUntil("the entity ran") { log.activations.count == 1 }
            #expect(region.passivateAll() == 1)
            await waitUntil("passivated") { region.statistics.active == 0 }

            let stored = try await reminders.register("expire", for: "cart-1", after: .milliseconds(150))
            #expect(try await reminders.reminders(for: "cart-1") == [stored])
            #expect(await waitUntil("the tick arrived") { log.ticks.count == 1 })
            let tick = try #require(log.ticks.values.first)
            #expect(tick.key == "cart-1" && tick.name == "expire" && tick.period == nil)
            #expect(tick.scheduledAt == stored.dueAt)
            #expect(log.activations.values == ["cart-1", "cart-1"], "the tick activated the entity again")
            #expect(try await reminders.reminders(for: "cart-1").isEmpty, "a one-shot is removed by its tick")
            try await Task.sleep(for: .milliseconds(300))
            #expect(log.ticks.count == 1)
            let statistics = reminders.statistics
            #expect(statistics.delivered == 1 && statistics.undelivered == 0 && statistics.storeFailures == 0)
            let section = system.snapshot().sections.first { $0.kind == "entity_reminders" && $0.instance == "alarm" }
            #expect(section?.values.first { $0.name == "delivered_total" }?.value == 1)
        }
    }

    @Test func aPeriodicReminderTicksOnItsGridUntilUnregistered() async throws {
        let store = InMemoryStore()
        try await withTestSystem { system in
            let log = AlarmLog()
            let reminders = EntityReminders(
                region: try alarms(system, log: log), store: store, pollInterval: .milliseconds(50)
            ) { .tick($0) }
            let stored = try await reminders.register(
                "report", for: "k", after: .milliseconds(100), every: .milliseconds(100))
            #expect(await waitUntil("three ticks") { log.ticks.count >= 3 })
            #expect(try await reminders.unregister("report", for: "k"))
            #expect(try await !reminders.unregister("report", for: "k"), "nothing left to remove")
            try await Task.sleep(for: .milliseconds(150))  // a tick claimed before the removal may still land
            let count = log.ticks.count
            try await Task.sleep(for: .milliseconds(400))
            #expect(log.ticks.count == count, "no tick after the reminder was removed")
            let times = log.ticks.values.map(\.scheduledAt)
            #expect(Set(times).count == times.count, "each tick delivered once: \(times)")
            #expect(times.allSatisfy { ($0 - stored.dueAt) % 100 == 0 && $0 >= stored.dueAt }, "on the grid: \(times)")
            #expect(log.ticks.values.allSatisfy { $0.period == .milliseconds(100) })
        }
    }

    /// A store that answers fewer claims than it was given (against `claimTicks`' contract):
    /// the unanswered claims count as a store failure and are read again at the next poll,
    /// instead of staying in flight for good.
    @Test func claimsAStoreLeftUnansweredAreRetried() async throws {
        let store = ShortAnsweringStore()
        // Already due when the reminders start, so that the first poll claims all three in one
        // batch.
        let due = EntityReminders.wallClockMilliseconds() - 1_000
        for key in ["a", "b", "c"] {
            try await store.saveReminder(
                StoredReminder(kind: "alarm", key: key, name: "due", dueAt: due, periodMilliseconds: 0))
        }
        try await withTestSystem { system in
            let log = AlarmLog()
            let reminders = EntityReminders(
                region: try alarms(system, log: log), store: store, pollInterval: .milliseconds(50)
            ) { .tick($0) }
            #expect(await waitUntil("every tick arrived") { log.ticks.count == 3 })
            #expect(Set(log.ticks.values.map(\.key)) == ["a", "b", "c"])
            #expect(store.shortAnswers.count == 1, "the store answered short once")
            let statistics = reminders.statistics
            #expect(statistics.storeFailures == 1 && statistics.delivered == 3)
            #expect(statistics.pending == 0)
        }
    }

    @Test func aPollIntervalOutOfRangeStopsWithWhatToPass() async {
        // An exit test's body captures nothing: one body per interval.
        let tooShort = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let region = try alarms(ActorSystem(), log: AlarmLog())
            _ = EntityReminders(region: region, store: InMemoryStore(), pollInterval: .milliseconds(5)) { .tick($0) }
        }
        let tooLong = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let region = try alarms(ActorSystem(), log: AlarmLog())
            _ = EntityReminders(region: region, store: InMemoryStore(), pollInterval: .seconds(86_401)) { .tick($0) }
        }
        for result in [tooShort, tooLong] {
            let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(text.contains("pollInterval must be at least 10 ms and at most a day"), "\(text)")
        }
    }

    /// The process stops before the tick is due; the next process on the same file delivers it
    /// (once, with its original due time), activating the entity there.
    @Test func aReminderSurvivesARestartOfTheProcess() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/reminders.sqlite"
        let first = try await SQLiteStore.open(path: path)
        var registered: StoredReminder?
        try await withTestSystem { system in
            let reminders = EntityReminders(
                region: try alarms(system, log: AlarmLog()), store: first, pollInterval: .milliseconds(50)
            ) { .tick($0) }
            registered = try await reminders.register("wake", for: "sleeper", after: .milliseconds(600))
        }
        try await first.close()
        let stored = try #require(registered)
        try await Task.sleep(for: .milliseconds(900))  // due while no process ran it

        let second = try await SQLiteStore.open(path: path)
        try await withTestSystem { system in
            let log = AlarmLog()
            let reminders = EntityReminders(
                region: try alarms(system, log: log), store: second, pollInterval: .milliseconds(50)
            ) { .tick($0) }
            #expect(await waitUntil("the missed tick arrived") { log.ticks.count == 1 })
            #expect(log.ticks.values.first?.scheduledAt == stored.dueAt)
            #expect(try await reminders.reminders(for: "sleeper").isEmpty)
        }
        try await second.close()
    }

    /// Two nodes (two systems) share one store and both run the kind's reminders: each tick is
    /// claimed once, so it reaches one of them, never both.
    @Test func nodesSharingAStoreDeliverEachTickOnce() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/shared.sqlite"
        let (storeA, storeB) = (try await SQLiteStore.open(path: path), try await SQLiteStore.open(path: path))
        let (nodeA, nodeB) = (makeTestSystem(name: "node-a"), makeTestSystem(name: "node-b"))
        let log = AlarmLog()
        let onA = EntityReminders(region: try alarms(nodeA, log: log), store: storeA, pollInterval: .milliseconds(20)) {
            .tick($0)
        }
        let onB = EntityReminders(region: try alarms(nodeB, log: log), store: storeB, pollInterval: .milliseconds(20)) {
            .tick($0)
        }
        for key in ["a", "b", "c"] {
            try await onA.register("beat", for: key, after: .milliseconds(100), every: .milliseconds(100))
        }
        #expect(await waitUntil("ticks from both nodes' polls") { log.ticks.count >= 24 })
        onA.stop()
        onB.stop()
        try await Task.sleep(for: .milliseconds(200))
        let ticks = log.ticks.values.map { "\($0.key)@\($0.scheduledAt)" }
        #expect(Set(ticks).count == ticks.count, "a tick delivered twice: \(ticks.sorted())")
        let (a, b) = (onA.statistics, onB.statistics)
        #expect(a.delivered + b.delivered == ticks.count)
        #expect(a.storeFailures == 0 && b.storeFailures == 0)
        #expect(a.claimedElsewhere + b.claimedElsewhere > 0, "the nodes raced for ticks: \(a), \(b)")
        await nodeA.shutdown()
        await nodeB.shutdown()
        try await storeA.close()
        try await storeB.close()
    }

    /// More reminders due at one moment than one read returns (1,000): each page is read once
    /// the one before is claimed, never re-read in a loop while it waits to be due.
    @Test func aBurstLargerThanAPageIsFiredPageByPageWithoutRereading() async throws {
        let store = InMemoryStore()
        try await withTestSystem { system in
            let log = AlarmLog()
            let reminders = EntityReminders(
                region: try alarms(system, log: log), store: store, pollInterval: .milliseconds(200)
            ) { .tick($0) }
            let due = Int64(Date().timeIntervalSince1970 * 1000) + 1_000
            // Stored directly (as another node would): this node reads them when due.
            for index in 0..<2_500 {
                try await store.saveReminder(
                    StoredReminder(kind: "alarm", key: "k\(index)", name: "once", dueAt: due, periodMilliseconds: 0))
            }
            #expect(await waitUntil("2,500 ticks") { log.ticks.count == 2_500 })
            try await Task.sleep(for: .milliseconds(300))
            let keys = log.ticks.values.map(\.key)
            #expect(keys.count == 2_500 && Set(keys).count == 2_500, "each tick once")
            let statistics = reminders.statistics
            #expect(statistics.delivered == 2_500 && statistics.claimedElsewhere == 0)
            // Polls every 200 ms for the test's few seconds, and a few pages: not a loop.
            #expect(statistics.reads < 60, "\(statistics.reads) reads of the store")
        }
    }

    @Test func badRemindersAreRefusedWithTypedErrorsAndStoreNothing() async throws {
        let store = InMemoryStore()
        try await withTestSystem { system in
            let reminders = EntityReminders(region: try alarms(system, log: AlarmLog()), store: store) { .tick($0) }
            await #expect(throws: ReminderError.invalidName("the name is empty")) {
                try await reminders.register("", for: "k", after: .seconds(1))
            }
            await #expect(throws: ReminderError.self) {
                try await reminders.register(String(repeating: "n", count: 201), for: "k", after: .seconds(1))
            }
            await #expect(throws: ReminderError.self) {
                try await reminders.register("late", for: "k", after: .milliseconds(-1))
            }
            await #expect(throws: ReminderError.self) {
                try await reminders.register("far", for: "k", after: .seconds(Int64.max / 2))
            }
            await #expect(throws: ReminderError.self) {
                try await reminders.register("slow", for: "k", after: .zero, every: .seconds(Int64.max / 2))
            }
            do {
                try await reminders.register("fast", for: "k", after: .zero, every: .milliseconds(99))
                Issue.record("a 99 ms period was accepted")
            } catch let error as ReminderError {
                #expect(error.description.contains("shorter than"), "\(error)")
            }
            #expect(try await reminders.reminders(for: "k").isEmpty)
            reminders.stop()
            await #expect(throws: ReminderError.stopped) {
                try await reminders.register("after-stop", for: "k", after: .seconds(1))
            }
            #expect(try await reminders.reminders(for: "k").isEmpty)
        }
    }
}

/// What the alarms of a test saw: activations by key and every tick handled.
final class AlarmLog: Sendable {
    let activations = Recorder<String>()
    let ticks = Recorder<ReminderTick>()
}

/// An entity that records the reminder ticks it receives.
struct Alarm: ActorDefinition {
    enum Message: Sendable {
        case ping
        case tick(ReminderTick)
    }

    let key: String
    let log: AlarmLog

    func started(context: ActorContext<Message>) { log.activations.append(key) }

    func receive(_ message: Message, context: ActorContext<Message>) {
        if case .tick(let tick) = message { log.ticks.append(tick) }
    }
}

func alarms(_ system: ActorSystem, log: AlarmLog) throws -> EntityRegion<Alarm.Message> {
    try EntityRegion(system: system, kind: EntityKind("alarm", idleTimeout: nil) { id in Alarm(key: id.key, log: log) })
}

/// An in-memory store whose first batch of claims leaves its last claim unanswered (and
/// unclaimed): a custom store with a bug.
final class ShortAnsweringStore: ReminderStore {
    let base = InMemoryStore()
    let shortAnswers = Recorder<Int>()

    func saveReminder(_ reminder: StoredReminder) async throws { try await base.saveReminder(reminder) }
    func removeReminder(kind: String, key: String, name: String) async throws -> Bool {
        try await base.removeReminder(kind: kind, key: key, name: name)
    }
    func reminders(of kind: String, dueBy: Int64, limit: Int) async throws -> [StoredReminder] {
        try await base.reminders(of: kind, dueBy: dueBy, limit: limit)
    }
    func reminders(of kind: String, key: String) async throws -> [StoredReminder] {
        try await base.reminders(of: kind, key: key)
    }
    func claimTick(of reminder: StoredReminder, next: Int64?) async throws -> Bool {
        try await base.claimTick(of: reminder, next: next)
    }
    func claimTicks(_ claims: [ReminderClaim]) async throws -> [Bool] {
        guard shortAnswers.count == 0, claims.count > 1 else { return try await base.claimTicks(claims) }
        shortAnswers.append(claims.count)
        return try await base.claimTicks(Array(claims.dropLast()))
    }
}
