import Testing
import Troupe
import TroupeTestSupport

/// Pools: every routing strategy, broadcast, asks, growth, stopped members, bad input.
@Suite struct PoolTests {
    /// Jobs each member handled, in member order.
    private func handledCounts(_ pool: ActorPool<PoolWorker.Message>) async throws -> [Int] {
        try await pool.askAll { .handled($0) }.map { try $0.get() }
    }

    @Test func roundRobinTakesMembersInTurn() async throws {
        try await withTestSystem { system in
            let pool = try system.spawnPool(size: 3, routing: .roundRobin) { PoolWorker(index: $0) }
            for id in 0..<9 { #expect(pool.tell(.job(id)) == .enqueued) }
            #expect(try await handledCounts(pool) == [3, 3, 3])
            #expect(pool.members.count == 3)
            #expect(pool.members.map { $0.address.name } == ["PoolWorker-0", "PoolWorker-1", "PoolWorker-2"])
        }
    }

    @Test func randomReachesEveryMember() async throws {
        try await withTestSystem { system in
            let pool = try system.spawnPool(size: 3, routing: .random) { PoolWorker(index: $0) }
            for id in 0..<600 { pool.tell(.job(id)) }
            let counts = try await handledCounts(pool)
            #expect(counts.reduce(0, +) == 600)
            // Each member's share is binomial(600, 1/3): mean 200, sd ≈ 11.5.
            #expect(counts.allSatisfy { $0 > 120 && $0 < 280 }, "shares \(counts)")
        }
    }

    @Test func consistentHashSendsEqualKeysToOneMember() async throws {
        try await withTestSystem { system in
            let log = Recorder<Handled>()
            let pool = try system.spawnPool(
                size: 4,
                routing: .consistentHash { (message: PoolWorker.Message) -> String in
                    if case .keyed(let key, _) = message { return key }
                    return ""
                }
            ) { PoolWorker(index: $0, log: log) }
            let keys = (0..<40).map { "user-\($0)" }
            for round in 0..<5 {
                for (index, key) in keys.enumerated() { pool.tell(.keyed(key: key, id: round * 100 + index)) }
            }
            _ = try await handledCounts(pool)
            let membersByKey = Dictionary(grouping: log.values) { $0.id % 100 }.mapValues { Set($0.map(\.member)) }
            #expect(membersByKey.count == 40)
            #expect(membersByKey.values.allSatisfy { $0.count == 1 }, "a key went to several members")
            #expect(Set(membersByKey.values.map { $0.first! }).count > 1, "every key went to one member")
        }
    }

    @Test func consistentHashMovesKeysOnlyToANewMemberWhenThePoolIsLarger() async throws {
        try await withTestSystem { system in
            let routing = PoolRouting<PoolWorker.Message>.consistentHash(stableHash: { message in
                if case .route(let key, _) = message { return key }
                return 0
            })
            func mapping(size: Int) async throws -> [Int] {
                let pool = try system.spawnPool(size: size, routing: routing) { PoolWorker(index: $0) }
                var members: [Int] = []
                for key in 0..<200 {
                    members.append(try await pool.ask { .route(key: UInt64(key) &* 0x9E37_79B9_7F4A_7C15, $0) })
                }
                pool.stop()
                return members
            }
            let five = try await mapping(size: 5)
            #expect(try await mapping(size: 5) == five, "the same keys mapped differently in an equal pool")
            #expect(Set(five) == [0, 1, 2, 3, 4])
            let six = try await mapping(size: 6)
            let moved = zip(five, six).filter { $0 != $1 }
            // Consistent hashing: a key either stays or moves to the new member, and about
            // 1/6 of them move.
            #expect(moved.allSatisfy { $0.1 == 5 })
            #expect(moved.count > 10 && moved.count < 70, "\(moved.count) of 200 keys moved")
        }
    }

    @Test func leastLoadedAvoidsABusyMemberWithAQueue() async throws {
        try await withTestSystem(workers: 4) { system in
            let log = Recorder<Handled>()
            let pool = try system.spawnPool(size: 3, routing: .leastLoaded) { PoolWorker(index: $0, log: log) }
            let gate = Gate()
            let busy = pool.members[0]
            busy.tell(.hold(-1, gate))
            await waitUntil("member 0 busy") { gate.entered == 1 }
            for id in 1...50 { busy.tell(.job(-1 - id)) }  // a long queue behind the busy member
            #expect(pool.memberLoads?[0] == 51)
            for id in 0..<20 { pool.tell(.job(id)) }
            await waitUntil("routed jobs handled") { log.values.filter { $0.id >= 0 }.count == 20 }
            #expect(!log.values.contains { $0.id >= 0 && $0.member == 0 }, "a routed job went to the busy member")
            gate.open()
            #expect(try await handledCounts(pool).reduce(0, +) == 71)
            await waitUntil("all idle") { pool.memberLoads == [0, 0, 0] }
        }
    }

    @Test func leastLoadedPrefersAnIdleMember() async throws {
        try await withTestSystem(workers: 4) { system in
            let log = Recorder<Handled>()
            let pool = try system.spawnPool(size: 3, routing: .leastLoaded) { PoolWorker(index: $0, log: log) }
            let gates = [Gate(), Gate()]
            pool.members[0].tell(.hold(-1, gates[0]))
            pool.members[2].tell(.hold(-2, gates[1]))
            await waitUntil("members 0 and 2 busy") { gates[0].entered == 1 && gates[1].entered == 1 }
            // Member 1 is the only idle one: each job goes there once the previous is done.
            for id in 0..<5 {
                await waitUntil("member 1 idle") { pool.memberLoads?[1] == 0 }
                pool.tell(.job(id))
                await waitUntil("job handled") { log.values.contains { $0.id == id } }
            }
            #expect(log.values.filter { $0.id >= 0 }.allSatisfy { $0.member == 1 })
            gates.forEach { $0.open() }
        }
    }

    @Test func firstFreeOrGrowTakesTheFirstFreeThenGrowsToTheMaximum() async throws {
        try await withTestSystem(workers: 4) { system in
            let log = Recorder<Handled>()
            let made = AtomicCounter()
            let pool = try system.spawnPool(size: 1, routing: .firstFreeOrGrow(upTo: 3)) { index in
                made.increment()
                return PoolWorker(index: index, log: log)
            }
            #expect(pool.size == 1)
            #expect(pool.maximumSize == 3)
            // Free members are taken in member order: member 0 every time.
            for id in 0..<3 {
                await waitUntil("idle") { pool.memberLoads?.allSatisfy { $0 == 0 } == true }
                pool.tell(.job(id))
                await waitUntil("handled") { log.count == id + 1 }
            }
            #expect(log.values.allSatisfy { $0.member == 0 })
            #expect(pool.size == 1)

            // A member clears its busy flag just after its handler logged: wait for that.
            await waitUntil("idle") { pool.memberLoads?.allSatisfy { $0 == 0 } == true }
            // Keep every member busy: each new message finds none free and adds a member.
            let gates = [Gate(), Gate(), Gate()]
            for (index, gate) in gates.enumerated() {
                pool.tell(.hold(100 + index, gate))
                await waitUntil("member \(index) busy") { gate.entered == 1 }
                #expect(pool.size == index + 1)
            }
            // Full and all busy: no more members; the least loaded gets the message.
            pool.tell(.job(200))
            #expect(pool.size == 3)
            #expect(made.value == 3)
            gates.forEach { $0.open() }
            await waitUntil("job 200 handled") { log.values.contains { $0.id == 200 } }
            #expect(Set(log.values.filter { $0.id >= 100 && $0.id < 200 }.map(\.member)) == [0, 1, 2])
        }
    }

    @Test func broadcastReachesEveryMember() async throws {
        try await withTestSystem { system in
            let broadcasting = try system.spawnPool(size: 3, routing: .broadcast) { PoolWorker(index: $0) }
            #expect(broadcasting.tell(.job(1)) == .enqueued)
            #expect(broadcasting.tell(.job(2)) == .enqueued)
            #expect(try await handledCounts(broadcasting) == [2, 2, 2])
            // An ask has one reply: it goes to one member, in turn.
            let answered = try await broadcasting.ask { .whoAmI($0) }
            #expect((0..<3).contains(answered))

            let routed = try system.spawnPool(size: 4, routing: .roundRobin) { PoolWorker(index: $0) }
            #expect(routed.broadcast(.job(0)) == 4)
            #expect(try await handledCounts(routed) == [1, 1, 1, 1])
        }
    }

    @Test func askAllHearsFromEveryMemberInOrder() async throws {
        try await withTestSystem { system in
            let pool = try system.spawnPool(size: 4) { PoolWorker(index: $0) }
            let answers = await pool.askAll { .whoAmI($0) }
            #expect(answers.map { try? $0.get() } == [0, 1, 2, 3])
            let timedOut = await pool.askAll(timeout: .milliseconds(30)) { .keep($0) }
            #expect(timedOut.map { $0.askError?.kind } == Array(repeating: .timedOut, count: 4))
        }
    }

    @Test func perMemberConfigurationClosureSetsUpEachMember() async throws {
        try await withTestSystem { system in
            let pool = try system.spawnPool(
                size: 3, name: "labelled", of: { PoolWorker(index: -1) },
                configure: { worker, index in
                    worker.index = index
                    worker.label = "worker-\(index)"
                })
            let labels = await pool.askAll { .label($0) }.map { try? $0.get() }
            #expect(labels == ["worker-0", "worker-1", "worker-2"])
            #expect(pool.name == "labelled")
            #expect(pool.members[1].address.name == "labelled-1")
        }
    }

    @Test func handlerActorPoolsTakeAnyPayload() async throws {
        try await withTestSystem { system in
            let pool = try system.spawnPool(size: 3, routing: .leastLoaded, member: { APIActor(member: $0) })
            let answer: String = try await pool.ask("/health")
            #expect(answer.hasPrefix("GET /health via api-"))
            #expect(pool.broadcast("/warm-up") == 3)
            let mismatch = await askResult { () async throws -> Int in try await pool.ask("/x", returning: Int.self) }
            #expect(mismatch.askError?.kind == .typeMismatch)
        }
    }

    @Test func stoppedMembersAreSkipped() async throws {
        try await withTestSystem { system in
            let log = Recorder<Handled>()
            let pool = try system.spawnPool(size: 3, routing: .roundRobin) { PoolWorker(index: $0, log: log) }
            pool.members[1].stop()
            await waitUntil("member 1 stopped") { pool.members[1].isStopped }
            let before = system.deadLetters.total
            for id in 0..<12 { #expect(pool.tell(.job(id)) == .enqueued) }
            await waitUntil("jobs handled") { log.count == 12 }
            #expect(!log.values.contains { $0.member == 1 })
            #expect(system.deadLetters.total == before)
            #expect(!pool.isStopped)
            pool.stop()
            await waitUntil("pool stopped") { pool.isStopped }
            #expect(pool.tell(.job(99)) == .deadLettered(.recipientStopped))
        }
    }

    @Test func failedMembersRestartFromTheMemberClosure() async throws {
        try await withTestSystem(failureDecider: { _ in .restart }) { system in
            let made = AtomicCounter()
            let pool = try system.spawnPool(size: 2) { index in
                made.increment()
                return PoolWorker(index: index)
            }
            pool.members[0].tell(.fail)
            #expect(try await pool.members[0].ask { .whoAmI($0) } == 0)
            #expect(made.value == 3)
        }
    }

    @Test func invalidSizesAreTypedErrors() async throws {
        try await withTestSystem { system in
            let empty = expectError(PoolError.self, { try system.spawnPool(size: 0) { PoolWorker(index: $0) } }) {
                $0 == .invalidSize(0)
            }
            #expect(empty?.description.contains("at least 1") == true)
            let shrinking = expectError(
                PoolError.self,
                {
                    try system.spawnPool(size: 4, routing: .firstFreeOrGrow(upTo: 2)) { PoolWorker(index: $0) }
                }
            ) { $0 == .invalidMaximum(size: 4, maximum: 2) }
            #expect(shrinking?.description.contains("firstFreeOrGrow(upTo: 4)") == true)
            #expect(system.liveActorCount == 0)
        }
    }

    @Test func poolsAndRefsAreBothMessageTargets() async throws {
        try await withTestSystem { system in
            let pool = try system.spawnPool(size: 2) { PoolWorker(index: $0) }
            let single = system.spawn(PoolWorker(index: 7))
            let targets: [any MessageTarget<PoolWorker.Message>] = [pool, single]
            for target in targets { target.tell(.job(0)) }
            #expect(try await single.ask { .handled($0) } == 1)
            #expect(try await handledCounts(pool).reduce(0, +) == 1)
        }
    }

    @Test func manySendersRouteWithoutLosingMessages() async throws {
        try await withTestSystem { system in
            let strategies: [PoolRouting<PoolWorker.Message>] = [
                .roundRobin, .random, .leastLoaded, .firstFreeOrGrow(upTo: 4),
                .consistentHash { (message: PoolWorker.Message) -> Int in
                    if case .job(let id) = message { id } else { 0 }
                },
            ]
            for routing in strategies {
                let pool = try system.spawnPool(size: 2, routing: routing) { PoolWorker(index: $0) }
                await TestThreads.run(count: 4) { _ in
                    for id in 0..<2_500 { pool.tell(.job(id)) }
                }
                #expect(try await handledCounts(pool).reduce(0, +) == 10_000, "\(routing)")
            }
        }
    }
}
