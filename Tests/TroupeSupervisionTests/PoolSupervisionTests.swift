import Testing
import Troupe
import TroupeSupervision
import TroupeTestSupport

/// Supervised pools: a member's crash re-creates that member; a crash of the pool as a whole
/// re-creates every member, and what waited in their mailboxes is handled by the new ones.
@Suite struct PoolSupervisionTests {
    /// One journal per member index, shared by that member's instances.
    private static func journals(_ count: Int) -> [Journal] { (0..<count).map { _ in Journal() } }

    private static func states(_ pool: ActorPool<Worker.Message>) async throws -> [WorkerState] {
        var states: [WorkerState] = []
        for member in pool.members { states.append(try await member.state()) }
        return states
    }

    @Test func aMemberCrashRecreatesOnlyThatMemberAndKeepsItsMailbox() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let journals = Self.journals(3)
            let pool = try supervisor.supervisePool(id: "pool", size: 3) { index in Worker(journals[index]) }
            let gate = Gate()
            let failing = pool.members[1]
            failing.tell(.holdThenFail(gate, "member"))
            await waitUntil("member 1 is blocked") { gate.entered == 1 }
            for value in 1...20 { failing.tell(.work(value)) }
            gate.open()
            let states = try await Self.states(pool)
            #expect(states.map(\.instance) == [1, 2, 1])
            #expect(states[1].handled == Array(1...20), "the new member handled its predecessor's mailbox")
            #expect(events.lines == ["pool restarted (failed)"])
            #expect(events.events.values.first?.actor == failing.address)
            #expect(failing.address.name == "pool-1", "members are named after the pool's id")
            #expect(supervisor.restartCount(of: "pool") == 1)
        }
    }

    @Test func aWholePoolRestartRecreatesEveryMemberAndKeepsTheirMailboxes() async throws {
        try await withTestSystem(workers: 4) { system in  // three members blocked at once
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let journals = Self.journals(3)
            let pool = try supervisor.supervisePool(id: "pool", size: 3) { index in Worker(journals[index]) }
            let gate = Gate()
            #expect(pool.broadcast(.hold(gate)) == 3)
            await waitUntil("every member is blocked") { gate.entered == 3 }
            for (index, member) in pool.members.enumerated() {
                for value in 1...10 { member.tell(.work(index * 100 + value)) }
            }
            try supervisor.restart(id: "pool")
            gate.open()
            let states = try await Self.states(pool)
            #expect(states.map(\.instance) == [2, 2, 2])
            for index in 0..<3 {
                #expect(
                    states[index].handled == (1...10).map { index * 100 + $0 },
                    "member \(index)'s mailbox went to its new instance")
            }
            #expect(events.lines == ["pool restarted (restart requested)"])
        }
    }

    @Test func aLinkedParentsCrashRecreatesTheWholePool() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let database = try supervisor.superviseWorker(id: "db")
            let journals = Self.journals(2)
            let pool = try supervisor.supervisePool(id: "pool", size: 2) { index in Worker(journals[index]) }
            try supervisor.link("pool", toParent: "db")
            database.tell(.fail("connection lost"))
            await waitUntil("two restarts") { events.count == 2 }
            #expect(events.lines == ["db restarted (failed)", "pool restarted (linked parent 'db' restarted)"])
            #expect(try await Self.states(pool).map(\.instance) == [2, 2])
        }
    }

    @Test func anAllForOneSiblingsFailureRecreatesTheWholePool() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .allForOne())
            let events = EventLog(supervisor)
            let journals = Self.journals(2)
            let pool = try supervisor.supervisePool(id: "pool", size: 2) { index in Worker(journals[index]) }
            let sibling = try supervisor.superviseWorker(id: "sibling")
            sibling.tell(.fail("x"))
            await waitUntil("two restarts") { events.count == 2 }
            #expect(try await Self.states(pool).map(\.instance) == [2, 2])

            pool.members[0].tell(.fail("member"))  // a member crash stays inside the pool
            #expect(try await pool.members[0].state().instance == 3)
            #expect(try await sibling.state().instance == 2)
        }
    }

    @Test func aStopDecisionForAMemberStopsTheWholePool() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let pool = try supervisor.supervisePool(id: "pool", size: 3, policy: ChildPolicy(decider: { _ in .stop })) {
                _ in
                Worker(Journal())
            }
            pool.members[2].tell(.fail("fatal"))
            await waitUntil("every member stopped") { pool.isStopped }
            // `isStopped` turns true as the last member's stop begins; the supervisor hears of
            // it after, and publishes the event after removing the child.
            await waitUntil("the pool left, and its event") {
                !supervisor.contains(id: "pool") && !events.lines.isEmpty
            }
            #expect(events.lines == ["pool stopped (failed)"])
        }
    }

    @Test func unsupervisingAPoolStopsEveryMember() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let pool = try supervisor.supervisePool(id: "pool", size: 4, routing: .leastLoaded) { _ in Worker(Journal())
            }
            try supervisor.unsupervise(id: "pool")
            await waitUntil("every member stopped") { pool.isStopped }
            #expect(supervisor.ids.isEmpty)
        }
    }

    @Test func aPoolStoppedFromOutsideLeavesOnceEveryMemberStopped() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let pool = try supervisor.supervisePool(id: "pool", size: 3) { _ in Worker(Journal()) }
            pool.stop()
            await waitUntil("the pool left") { !supervisor.contains(id: "pool") }
            // The event is published after the child leaves the table (outside its lock).
            await waitUntil("the event") { !events.lines.isEmpty }
            #expect(pool.isStopped)
            #expect(events.lines == ["pool terminated (stopped)"])
        }
    }

    @Test func handlerActorPoolsAreSupervisedToo() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let instances = AtomicCounter()
            let pool = try supervisor.supervisePool(id: "tallies", size: 2) { _ in Tally(instances: instances) }
            let member = pool.members[0]
            member.tell(Tally.Add(amount: 3))
            member.tell(Tally.Explode())
            member.tell(Tally.Add(amount: 4))
            #expect(try await member.ask(Tally.Total(), returning: Int.self) == 4)
            #expect(instances.value == 3)
            #expect(try supervisor.pool(id: "tallies", as: AnyMessage.self) === pool)
        }
    }
}
