import Testing
import Troupe
import TroupeTestSupport
import TroupeVirtualActors

@Suite struct EntityRegionTests {
    @Test func theFirstMessageActivatesTheEntityAndLaterOnesReachTheSameActivation() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let region = try tallies(system, log: log)
            let cart = region.entity("user-42")
            #expect(region.statistics.active == 0, "a reference alone activates nothing")
            #expect(cart.tell(.add(40)) == .enqueued)
            cart.tell(.add(2))
            #expect(try await cart.ask { .total($0) } == 42)
            #expect(try await region.entity("user-42").ask { .identity($0) } == EntityID(kind: "tally", key: "user-42"))
            #expect(cart.id == EntityID(kind: "tally", key: "user-42"))
            #expect(cart == region.entity("user-42") && cart != region.entity("user-43"))
            let statistics = region.statistics
            #expect(statistics.activations == 1 && statistics.active == 1)
            #expect(log.started.values == ["user-42"])
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func anAskActivatesAnEntityThatDoesNotExistYet() async throws {
        try await withTestSystem { system in
            let region = try tallies(system, log: TallyLog())
            #expect(try await region.entity("new").ask { .total($0) } == 0)
            #expect(region.statistics.activations == 1)
        }
    }

    @Test func anIdleEntityIsPassivatedAndTheNextMessageActivatesItAgain() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let region = try tallies(system, log: log, idleTimeout: .milliseconds(40))
            let cart = region.entity("c")
            cart.tell(.add(5))
            #expect(try await cart.ask { .total($0) } == 5)
            await waitUntil("passivated for idleness") { region.statistics.idlePassivations == 1 }
            await waitUntil("its stop hook ran") { log.stopped.values == ["c"] }
            // The region hears of the stop after the hook (its termination callback).
            await waitUntil("the region saw it stop") { region.statistics.active == 0 }
            // Not durable: the next activation starts from its factory.
            #expect(try await cart.ask { .total($0) } == 0)
            #expect(log.started.values == ["c", "c"])
            #expect(region.statistics.activations == 2)
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func messagesSentDuringPassivationReachTheNextActivationInOrder() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let region = try tallies(system, log: log)
            let cart = region.entity("k")
            cart.tell(.numbered(sender: 0, sequence: 0))
            #expect(try await cart.ask { .total($0) } == 0)
            #expect(region.passivateAll() == 1)
            for sequence in 1..<200 { cart.tell(.numbered(sender: 0, sequence: sequence)) }
            #expect(try await cart.ask { .total($0) } == 0)
            #expect(log.handled.values.map(\.sequence) == Array(0..<200))
            #expect(region.statistics.activations == 2)
            #expect(system.deadLetters.total == 0)
        }
    }

    /// Senders on several tasks hammer a few entities while the region passivates them over and
    /// over: every message is handled exactly once, in each sender's order, and no identity
    /// ever has two activations at once.
    @Test func noMessageIsLostOrReorderedAndNoIdentityRunsTwiceAcrossRacingPassivations() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let region = try tallies(system, log: log, idleTimeout: .milliseconds(4))
            let keys = (0..<4).map { "e\($0)" }
            let senders = 4
            let perSender = 3_000
            let passivating = Flag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for sender in 0..<senders {
                    group.addTask {
                        for sequence in 0..<perSender {
                            for key in keys { region.entity(key).tell(.numbered(sender: sender, sequence: sequence)) }
                            if sequence % 500 == 0 {
                                _ = try await region.entity(keys[sequence % keys.count]).ask { .total($0) }
                            }
                        }
                    }
                }
                group.addTask {
                    while !passivating.isSet {
                        region.passivateAll()
                        await Task.yield()
                    }
                }
                for _ in 0..<senders { try await group.next() }
                passivating.set()
                try await group.waitForAll()
            }
            let total = keys.count * senders * perSender
            await waitUntil("every message handled") { log.handled.count == total }
            var next: [String: [Int]] = [:]
            var inOrder = true
            for handled in log.handled.values {
                var expected = next[handled.key, default: Array(repeating: 0, count: senders)]
                if handled.sequence != expected[handled.sender] { inOrder = false }
                expected[handled.sender] = handled.sequence + 1
                next[handled.key] = expected
            }
            #expect(inOrder)
            #expect(log.handled.count == total)
            #expect(log.mostConcurrentActivationsOfOneKey == 1)
            #expect(region.statistics.activations > keys.count, "the test passivated nothing")
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func activationsAreCountedInEveryPhaseUntilTheyStop() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let region = try tallies(system, log: log)
            #expect(!region.hasActivation("a"))
            #expect(region.activations { _ in true } == 0)
            _ = region.entity("unused")  // a vacant slot is no activation
            for key in ["a", "b", "c"] { #expect(try await region.entity(key).ask { .total($0) } == 0) }
            #expect(region.hasActivation("a") && !region.hasActivation("unused"))
            #expect(region.activations { $0 != "c" } == 2)
            #expect(region.passivate { $0 == "a" } == 1)
            // Stopping, it no longer takes messages for itself, but it still counts until it has stopped.
            #expect(!region.hasActivation("a"))
            await waitUntil("a stopped") { region.activations { $0 == "a" } == 0 }
            #expect(region.activations { _ in true } == 2)
            #expect(log.stopped.values == ["a"])
        }
    }

    @Test func theActiveLimitPassivatesTheLeastRecentlyUsed() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let region = try tallies(system, log: log, activeLimit: 10)
            for index in 0..<25 { #expect(try await region.entity("e\(index)").ask { .total($0) } == 0) }
            await waitUntil("every passivation done, every stop hook run") {
                let statistics = region.statistics
                return statistics.passivating == 0 && log.stopped.count == 25 - statistics.active
            }
            let statistics = region.statistics
            #expect(statistics.activations == 25)
            #expect((9...10).contains(statistics.active), "evicted down to nine tenths of the limit, not further")
            #expect(statistics.limitPassivations == 25 - statistics.active)
            // One ask each, in turn: recency is the order of activation, also when the region's
            // sweeper (every second for a limit) runs meanwhile, so the oldest went first.
            let stopped = Set(log.stopped.values)
            #expect(stopped == Set((0..<(25 - statistics.active)).map { "e\($0)" }))
            #expect(system.deadLetters.total == 0)
        }
    }

    /// Many activations at once, none awaited: activations still stopping are not counted
    /// against the limit again (which would passivate far below it).
    @Test func aBurstOverTheActiveLimitPassivatesDownToNineTenthsOfIt() async throws {
        try await withTestSystem { system in
            let log = TallyLog(stopPause: .microseconds(200))  // victims stop while activations go on
            let region = try tallies(system, log: log, activeLimit: 100)
            for index in 0..<2_000 { region.entity("b\(index)").tell(.add(1)) }
            await waitUntil("all activated") { region.statistics.activations == 2_000 }
            await waitUntil("every passivation done, every stop hook run") {
                let statistics = region.statistics
                return statistics.passivating == 0 && log.stopped.count == 2_000 - statistics.active
            }
            #expect((90...100).contains(region.statistics.active), "\(region.statistics)")
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func anEntityThatStopsOnItsOwnIsActivatedAgainByTheNextMessage() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let region = try tallies(system, log: log)
            let cart = region.entity("s")
            cart.tell(.add(3))
            cart.tell(.stopYourself)
            await waitUntil("the stop was seen") { region.statistics.unplannedStops == 1 }
            await waitUntil("and its activation counted gone") { region.statistics.active == 0 }
            #expect(try await cart.ask { .total($0) } == 0)
            #expect(region.statistics.activations == 2)
        }
    }

    @Test func anEntityThatFailsAndStopsIsActivatedAgain() async throws {
        try await withTestSystem { system in
            let region = try tallies(system, log: TallyLog())
            let cart = region.entity("f")
            cart.tell(.fail)
            await waitUntil("the failure stopped it") { region.statistics.unplannedStops == 1 }
            #expect(try await cart.ask { .total($0) } == 0)
        }
    }

    /// An ask sent right behind a failing message reaches the stopped activation (or its closed
    /// mailbox) before the region knows of the stop: it is not handled there, so it goes to the
    /// next activation instead of failing.
    @Test func anAskRightBehindAFailureGoesToTheNextActivation() async throws {
        try await withTestSystem { system in
            let region = try tallies(system, log: TallyLog())
            let cart = region.entity("g")
            for round in 1...20 {
                cart.tell(.add(2))
                cart.tell(.fail)
                #expect(try await cart.ask { .total($0) } == 0)
                #expect(region.statistics.activations == round + 1)
            }
        }
    }

    /// A kind whose options set a failure decider is spawned with its factory, so a decided
    /// restart replaces the instance in place: same activation, fresh state, nothing activated
    /// again. (Without a decider an activation has no factory; the test above shows it stopped.)
    @Test func aKindWithAFailureDeciderRestartsInPlace() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let made = Recorder<String>()
            let region = try EntityRegion(
                system: system,
                kind: EntityKind(
                    "restarting", idleTimeout: nil, options: SpawnOptions(failureDecider: { _ in .restart() })
                ) { id in
                    made.append(id.key)
                    return Tally(id: id, log: log)
                })
            let cart = region.entity("r")
            cart.tell(.add(5))
            #expect(try await cart.ask { .total($0) } == 5)
            cart.tell(.fail)
            #expect(try await cart.ask { .total($0) } == 0)  // the fresh instance's sum
            #expect(made.values == ["r", "r"])
            #expect(region.statistics.activations == 1)
            #expect(region.statistics.unplannedStops == 0)
        }
    }

    /// The factory is user code: it runs outside the directory's lock, so it may use the region
    /// (here, its statistics, which take that lock; under the lock this test would hang).
    @Test func theFactoryMayUseTheRegion() async throws {
        try await withTestSystem { system in
            let log = TallyLog()
            let regionBox = WeakRegion()  // weakly: a strong capture would keep region and system for ever
            let seen = Recorder<Int>()
            let region = try EntityRegion(
                system: system,
                kind: EntityKind("reentrant", idleTimeout: nil) { id in
                    seen.append(regionBox.region?.statistics.activations ?? -1)
                    return Tally(id: id, log: log)
                })
            regionBox.region = region
            #expect(try await region.entity("a").ask { .total($0) } == 0)
            region.entity("b").tell(.add(1))
            #expect(try await region.entity("b").ask { .total($0) } == 1)
            #expect(seen.values == [1, 2])
        }
    }

    @Test func aSecondRegionOfAKindFails() async throws {
        try await withTestSystem { system in
            _ = try tallies(system, log: TallyLog(), name: "cart")
            #expect(throws: EntityRegionError.duplicateKind("cart")) {
                try tallies(system, log: TallyLog(), name: "cart")
            }
            _ = try tallies(system, log: TallyLog(), name: "order")
            try await withTestSystem { other in _ = try tallies(other, log: TallyLog(), name: "cart") }
        }
    }

    @Test func afterShutdownATellIsADeadLetterAndAnAskFails() async throws {
        let system = makeTestSystem()
        let region = try tallies(system, log: TallyLog())
        #expect(try await region.entity("a").ask { .total($0) } == 0)
        await system.shutdown()
        await waitUntil("the activation stopped") { region.statistics.active == 0 }
        let before = system.deadLetters.total
        let outcome = region.entity("a").tell(.add(1))
        #expect(!outcome.isEnqueued, "\(outcome)")
        #expect(system.deadLetters.total == before + 1, "the refused message is counted once")
        let result = await askResult { try await region.entity("a").ask { .total($0) } }
        guard case .undeliverable(.systemShutdown)? = result.askError else {
            Issue.record("expected undeliverable(systemShutdown), got \(result)")
            return
        }
    }

    @Test func theSnapshotShowsTheRegion() async throws {
        try await withTestSystem { system in
            let region = try tallies(system, log: TallyLog(), name: "shown")
            _ = try await region.entity("x").ask { .total($0) }
            let section = system.snapshot().sections.first { $0.kind == "entity_region" && $0.instance == "shown" }
            #expect(section?.values.first { $0.name == "active" }?.value == 1)
            #expect(section?.values.first { $0.name == "activations" }?.value == 1)
        }
    }
}
