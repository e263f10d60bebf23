import Testing
import TroupePersistence

#if !TROUPE_CI_SANITIZER_BUILD
    import TroupePersistencePostgres
#endif

/// What every ``ReminderStore`` must keep and refuse: one row per entity and name, due reminders
/// in due order, and a tick claimed by exactly one of many concurrent claims.
@Suite struct ReminderStoreContractTests {
    static func reminder(
        _ key: String, _ name: String, due: Int64, period: Int64 = 0, kind: String = "cart"
    )
        -> StoredReminder
    {
        StoredReminder(kind: kind, key: key, name: name, dueAt: due, periodMilliseconds: period)
    }

    static func reminders(_ test: TestStore) throws -> any ReminderStore {
        try #require(test.store as? any ReminderStore, "\(type(of: test.store)) stores no reminders")
    }

    @Test(arguments: StoreKind.available) func remindersAreKeptPerEntityAndNameAndReadInDueOrder(
        kind: StoreKind
    )
        async throws
    {
        let test = try await kind.make()
        let store = try Self.reminders(test)
        try await store.saveReminder(Self.reminder("u1", "expire", due: 300))
        try await store.saveReminder(Self.reminder("u1", "report", due: 100, period: 1000))
        try await store.saveReminder(Self.reminder("u2", "expire", due: 200))
        try await store.saveReminder(Self.reminder("u2", "expire", due: 250))  // replaces the one above
        try await store.saveReminder(Self.reminder("u1", "expire", due: 50, kind: "order"))  // another kind
        #expect(
            try await store.reminders(of: "cart", key: "u1") == [
                Self.reminder("u1", "expire", due: 300), Self.reminder("u1", "report", due: 100, period: 1000),
            ])
        #expect(try await store.reminders(of: "cart", key: "u2") == [Self.reminder("u2", "expire", due: 250)])
        #expect(try await store.reminders(of: "cart", key: "nobody").isEmpty)
        #expect(
            try await store.reminders(of: "cart", dueBy: 250, limit: 10).map(\.dueAt) == [100, 250],
            "due by 250, earliest first, of this kind only")
        #expect(try await store.reminders(of: "cart", dueBy: 1_000, limit: 2).map(\.dueAt) == [100, 250])
        #expect(try await store.reminders(of: "order", dueBy: 1_000, limit: 10).map(\.key) == ["u1"])
        #expect(try await store.removeReminder(kind: "cart", key: "u2", name: "expire"))
        #expect(try await !store.removeReminder(kind: "cart", key: "u2", name: "expire"))
        #expect(try await store.reminders(of: "cart", key: "u2").isEmpty)
        await test.close()
    }

    @Test(arguments: StoreKind.available) func aClaimMovesOrRemovesOnlyTheRowItRead(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = try Self.reminders(test)
        let periodic = Self.reminder("k", "beat", due: 1_000, period: 500)
        let once = Self.reminder("k", "once", due: 1_000)
        try await store.saveReminder(periodic)
        try await store.saveReminder(once)
        #expect(try await store.claimTick(of: periodic, next: 1_500))
        #expect(try await !store.claimTick(of: periodic, next: 1_500), "the tick at 1,000 was claimed already")
        var moved = periodic
        moved.dueAt = 1_500
        #expect(try await store.reminders(of: "cart", key: "k").first { $0.name == "beat" } == moved)
        var otherPeriod = moved
        otherPeriod.periodMilliseconds = 100
        #expect(try await !store.claimTick(of: otherPeriod, next: 1_600), "a replaced reminder is not claimed")
        #expect(try await store.claimTick(of: once, next: nil))
        #expect(try await !store.claimTick(of: once, next: nil))
        #expect(try await store.reminders(of: "cart", key: "k") == [moved])
        #expect(try await !store.claimTick(of: Self.reminder("ghost", "x", due: 1), next: nil))
        await test.close()
    }

    /// A batch claims each tick as a claim alone would: periodic ones move, one-shots go, stale
    /// ones (another due time, another period, a removed reminder) are refused.
    @Test(arguments: StoreKind.available) func aBatchClaimAnswersEachTickAsAClaimAlone(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = try Self.reminders(test)
        var claims: [ReminderClaim] = []
        for index in 0..<300 {  // more than one statement's chunk
            let periodic = Self.reminder("p\(index)", "beat", due: 100, period: 50)
            let once = Self.reminder("o\(index)", "once", due: 100)
            try await store.saveReminder(periodic)
            try await store.saveReminder(once)
            claims.append(ReminderClaim(periodic, next: 150))
            claims.append(ReminderClaim(once, next: nil))
        }
        // Stale: a due time the row does not have, a period it does not have, a reminder never stored.
        claims.append(ReminderClaim(Self.reminder("p0", "beat", due: 99, period: 50), next: 149))
        claims.append(ReminderClaim(Self.reminder("p1", "beat", due: 100, period: 51), next: 151))
        claims.append(ReminderClaim(Self.reminder("ghost", "once", due: 100), next: nil))
        let won = try await store.claimTicks(claims)
        #expect(won == Array(repeating: true, count: 600) + [false, false, false])
        #expect(try await store.reminders(of: "cart", dueBy: 149, limit: 1_000).isEmpty)
        #expect(try await store.reminders(of: "cart", dueBy: 150, limit: 1_000).count == 300)
        #expect(try await store.claimTicks(Array(claims.prefix(10))) == Array(repeating: false, count: 10))
        #expect(try await store.claimTicks([]) == [])
        await test.close()
    }

    /// Nodes claiming the same batch at once: every tick is won by exactly one of them.
    @Test(arguments: StoreKind.available) func ofConcurrentBatchClaimsEachTickIsWonOnce(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = try Self.reminders(test)
        var claims: [ReminderClaim] = []
        for index in 0..<100 {
            let reminder = Self.reminder("b\(index)", "r", due: 10, period: index % 2 == 0 ? 10 : 0)
            try await store.saveReminder(reminder)
            claims.append(ReminderClaim(reminder, next: index % 2 == 0 ? 20 : nil))
        }
        let batch = claims
        let results = try await withThrowingTaskGroup(of: [Bool].self) { group in
            for _ in 0..<4 { group.addTask { try await store.claimTicks(batch) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for index in claims.indices {
            let wins = results.count { $0[index] }
            #expect(wins == 1, "\(claims[index].reminder): won \(wins) times")
        }
        await test.close()
    }

    /// Many claims of one tick at once (nodes that all read the reminder): exactly one wins.
    @Test(arguments: StoreKind.available) func ofConcurrentClaimsOfOneTickExactlyOneWins(kind: StoreKind) async throws {
        let test = try await kind.make()
        let store = try Self.reminders(test)
        for round in 0..<20 {
            let reminder = Self.reminder("race", "r\(round)", due: 10, period: 10)
            try await store.saveReminder(reminder)
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 { group.addTask { try await store.claimTick(of: reminder, next: 20) } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1, "round \(round): \(wins) claims of one tick succeeded")
        }
        await test.close()
    }

    #if !TROUPE_CI_SANITIZER_BUILD
        /// A version-2 database (before reminders) is migrated when a store connects to it: the
        /// table is created, the version is 3, and reminders work.
        @Test(.enabled(if: PostgresTestServer.configured != nil))
        func aVersion2PostgresDatabaseIsMigratedToReminders() async throws {
            let server = try #require(PostgresTestServer.configured)
            let database = try await server.createDatabase()
            let first = try await PostgresStore.connect(server.configuration(database: database))
            first.close()
            // Version 2's layout: what a build before reminders left.
            try await server.administer("DROP TABLE troupe_reminders", on: database)
            try await server.administer("UPDATE troupe_schema SET version = 2", on: database)
            let store = try await PostgresStore.connect(server.configuration(database: database))
            try await store.saveReminder(Self.reminder("a", "n", due: 1))
            // The table exists again: only the migration to version 3 creates it.
            #expect(try await store.reminders(of: "cart", key: "a") == [Self.reminder("a", "n", due: 1)])
            store.close()
            try await server.dropDatabase(database)
        }
    #endif
}
