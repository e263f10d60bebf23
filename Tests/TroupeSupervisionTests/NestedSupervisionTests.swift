import Testing
import Troupe
import TroupeSupervision
import TroupeTestSupport
import TroupeTesting

/// Nested supervisors: escalation to the parent, whose strategy decides for the whole group.
@Suite struct NestedSupervisionTests {
    private static let escalating = SupervisionStrategy.oneForOne(decider: { _ in .escalate })

    @Test func anEscalationThatTheParentRestartsRestartsEveryChildOfTheGroup() async throws {
        try await withTestSystem { system in
            let root = Supervisor(system: system, name: "root")
            let rootEvents = EventLog(root)
            let group = try root.superviseSupervisor(id: "group", strategy: Self.escalating)
            let groupEvents = EventLog(group)
            let x = try group.superviseWorker(id: "x")
            let y = try group.superviseWorker(id: "y")
            let bystander = try root.superviseWorker(id: "bystander")
            y.tell(.work(1))
            _ = try await y.state()
            x.tell(.fail("x"))
            await waitUntil("the group restarted") { rootEvents.count == 1 }
            #expect(
                groupEvents.lines == [
                    "x escalated to 'root'",
                    "x restarted (enclosing supervisor restarted)",
                    "y restarted (enclosing supervisor restarted)",
                ])
            #expect(rootEvents.lines == ["group restarted (failed)"])
            #expect(try await x.state().instance == 2)
            #expect(try await y.state() == WorkerState(instance: 2, handled: []))
            #expect(try await bystander.state().instance == 1)
            #expect(root.failureCount(of: "group") == 1)
            #expect(root.restartCount(of: "group") == 1)
            #expect(group.restartCount(of: "y") == 1)
        }
    }

    @Test func anEscalationThatTheParentStopsStopsTheGroupForGood() async throws {
        try await withTestSystem { system in
            let root = Supervisor(system: system, name: "root")
            let group = try root.superviseSupervisor(
                id: "group", strategy: Self.escalating,
                policy: ChildPolicy(decider: { _ in .stop }))
            let groupEvents = EventLog(group)
            let x = try group.superviseWorker(id: "x")
            let y = try group.superviseWorker(id: "y")
            x.tell(.fail("x"))
            await waitUntil("both stopped") { x.isStopped && y.isStopped }
            #expect(group.isStopped)
            #expect(group.ids.isEmpty)
            #expect(group.parent == nil)
            #expect(!root.contains(id: "group"))
            #expect(
                groupEvents.lines == [
                    "x escalated to 'root'", "x stopped (supervisor stopped)", "y stopped (supervisor stopped)",
                ])
            #expect(throws: SupervisionError.supervisorStopped("root/group")) { try group.superviseWorker(id: "z") }
        }
    }

    @Test func anExceededIntensityCanEscalateToTheParent() async throws {
        try await withTestSystem { system in
            let root = Supervisor(system: system, name: "root")
            let strategy = SupervisionStrategy.oneForOne(
                intensity: RestartIntensity(maxRestarts: 1, within: .seconds(60), whenExceeded: .escalate))
            let group = try root.superviseSupervisor(id: "group", strategy: strategy)
            let groupEvents = EventLog(group)
            let x = try group.superviseWorker(id: "x")
            let y = try group.superviseWorker(id: "y")
            x.tell(.fail("1"))  // restarted by the group
            x.tell(.fail("2"))  // over the budget: escalated, and the root restarts the group
            #expect(try await x.state().instance == 3)
            #expect(try await y.state().instance == 2)
            #expect(
                groupEvents.lines == [
                    "x restarted (failed)",
                    "x intensity exceeded (1 restarts within 60.0 seconds)",
                    "x escalated to 'root'",
                    "x restarted (enclosing supervisor restarted)",
                    "y restarted (enclosing supervisor restarted)",
                ])
        }
    }

    @Test func escalationsClimbSeveralLevels() async throws {
        try await withTestSystem { system in
            let root = Supervisor(system: system, name: "root")
            let middle = try root.superviseSupervisor(id: "middle")
            let leaf = try middle.superviseSupervisor(
                id: "leaf", strategy: Self.escalating,
                policy: ChildPolicy(decider: { _ in .escalate }))
            let sideline = try middle.superviseWorker(id: "sideline")
            let worker = try leaf.superviseWorker(id: "worker")
            #expect(leaf.name == "root/middle/leaf")
            worker.tell(.fail("deep"))
            #expect(try await worker.state().instance == 2)
            #expect(try await sideline.state().instance == 2, "the root restarted all of `middle`")
            #expect(root.restartCount(of: "middle") == 1)
            #expect(middle.restartCount(of: "leaf") == 1)
        }
    }

    @Test func aTopLevelEscalationOfAGroupStopsIt() async throws {
        try await withTestSystem { system in
            let root = Supervisor(system: system, name: "root")
            let rootEvents = EventLog(root)
            let group = try root.superviseSupervisor(
                id: "group", strategy: Self.escalating,
                policy: ChildPolicy(decider: { _ in .escalate }))
            let x = try group.superviseWorker(id: "x")
            x.tell(.fail("x"))
            _ = await x.terminated()
            #expect(group.isStopped)
            #expect(
                rootEvents.lines == [
                    "group escalated (top level)", "group stopped (escalated by a top-level supervisor)",
                ])
        }
    }

    @Test func aGroupRestartsWithItsLinkedParentAndWithAnAllForOneSibling() async throws {
        try await withTestSystem { system in
            let root = Supervisor(system: system, name: "root")
            let database = try root.superviseWorker(id: "db")
            let group = try root.superviseSupervisor(id: "group")
            let x = try group.superviseWorker(id: "x")
            try root.link("group", toParent: "db")
            database.tell(.fail("db"))
            _ = try await database.state()  // the restarts were ordered during db's failure
            #expect(try await x.state().instance == 2)

            let allForOne = Supervisor(system: system, strategy: .allForOne(), name: "all")
            let sibling = try allForOne.superviseWorker(id: "sibling")
            let nested = try allForOne.superviseSupervisor(id: "nested")
            let z = try nested.superviseWorker(id: "z")
            sibling.tell(.fail("sibling"))
            _ = try await sibling.state()
            #expect(try await z.state().instance == 2)
        }
    }

    /// On virtual time: the parent's backoff is waited out exactly.
    @Test func theParentsBackoffDelaysTheFailingActorOfTheGroup() throws {
        var configuration = ActorSystem.Configuration(name: "nested")
        configuration.logger = quietLogger
        let system = DeterministicSystem(seed: 31, configuration: configuration)
        defer { system.shutdown() }
        let delay = Duration.seconds(60)
        let root = Supervisor(
            system: system.system,
            strategy: .oneForOne(backoff: .exponential(initial: delay, maximum: .seconds(600), jitter: 0)),
            name: "root")
        let group = try root.superviseSupervisor(id: "group", strategy: Self.escalating)
        let journal = Journal()
        let x = try group.superviseWorker(id: "x", journal: journal)
        x.tell(.failTimed("x"))
        #expect(try system.ask(x, timeout: .seconds(120)) { .state($0) }.instance == 2, "answered after the pause")
        let failed = try #require(journal.failureTimes.last)
        let restarted = try #require(journal.restartTimes.last)
        #expect(restarted - failed == delay)
    }

    @Test func unsupervisingAGroupStopsItsChildrenAndClosesIt() async throws {
        try await withTestSystem { system in
            let root = Supervisor(system: system, name: "root")
            let group = try root.superviseSupervisor(id: "group")
            let inner = try group.superviseSupervisor(id: "inner")
            let x = try group.superviseWorker(id: "x")
            let y = try inner.superviseWorker(id: "y")
            try root.unsupervise(id: "group")
            await waitUntil("all stopped") { x.isStopped && y.isStopped }
            #expect(group.isStopped && inner.isStopped)
            #expect(root.ids.isEmpty)
        }
    }
}
