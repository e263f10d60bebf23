import Testing
import Troupe
import TroupeSupervision
import TroupeTestSupport
import TroupeTesting

/// Directives, scopes, restart intensity, backoff, the failing message's fate, the mailbox
/// across restarts and the lifecycle hooks.
@Suite struct SupervisorTests {
    /// A deterministic system's configuration that keeps the runtime's failure logs quiet.
    var quietConfiguration: ActorSystem.Configuration {
        var configuration = ActorSystem.Configuration(name: "supervision")
        configuration.logger = quietLogger
        return configuration
    }

    // MARK: Directives

    @Test func restartReplacesTheInstanceKeepsTheRefAndCountsIt() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let journal = Journal()
            let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
            worker.tell(.work(1))
            worker.tell(.fail("x"))
            worker.tell(.work(2))
            let state = try await worker.state()
            #expect(state == WorkerState(instance: 2, handled: [2]), "fresh instance, then the next message")
            #expect(supervisor["worker", as: Worker.Message.self] == worker, "the ref stays valid across the restart")
            #expect(supervisor.restartCount(of: "worker") == 1)
            #expect(supervisor.failureCount(of: "worker") == 1)
            #expect(events.lines == ["worker restarted (failed)"])
            #expect(events.events.values.first?.error as? Boom == Boom("x"))
            #expect(events.events.values.first?.actor == worker.address)
            #expect(system.deadLetters.count(.handlerFailed) == 1, "the failing message is dead-lettered by default")
        }
    }

    @Test func contextCrashIsAFailureLikeAThrow() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let journal = Journal()
            let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
            worker.tell(.crash("from inside"))
            #expect(try await worker.state().instance == 2)
            #expect(journal.log.values.contains("willRestart#1 Boom(from inside)"))
        }
    }

    @Test func resumeKeepsTheInstanceAndItsState() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .oneForOne(decider: { _ in .resume }))
            let events = EventLog(supervisor)
            let journal = Journal()
            let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
            worker.tell(.work(1))
            worker.tell(.fail("x"))
            worker.tell(.work(2))
            #expect(try await worker.state() == WorkerState(instance: 1, handled: [1, 2]))
            #expect(events.lines == ["worker resumed"])
            #expect(supervisor.restartCount(of: "worker") == 0)
            #expect(supervisor.failureCount(of: "worker") == 1)
            #expect(system.deadLetters.count(.handlerFailed) == 1)
        }
    }

    @Test func stopStopsTheActorAndUnsupervisesIt() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let journal = Journal()
            let worker = try supervisor.supervise(id: "worker", policy: ChildPolicy(decider: { _ in .stop })) {
                Worker(journal)
            }
            worker.tell(.fail("fatal"))
            let terminated = await worker.terminated()
            #expect(terminated.reason.isFailure)
            #expect(!supervisor.contains(id: "worker"))
            #expect(supervisor.ids.isEmpty)
            #expect(events.lines == ["worker stopped (failed)"])
            #expect(journal.log.values == ["started#1", "stopped#1"])
        }
    }

    @Test func escalationAtTopLevelStopsTheChildAndItsLinkedChildren() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, name: "root")
            let events = EventLog(supervisor)
            let parent = try supervisor.superviseWorker(id: "parent", policy: ChildPolicy(decider: { _ in .escalate }))
            let child = try supervisor.superviseWorker(id: "child")
            let bystander = try supervisor.superviseWorker(id: "bystander")
            try supervisor.link("child", toParent: "parent")
            parent.tell(.fail("unhandled"))
            await waitUntil("both stopped") { parent.isStopped && child.isStopped }
            #expect(!bystander.isStopped)
            #expect(supervisor.ids == ["bystander"])
            #expect(
                events.lines == [
                    "parent escalated (top level)",
                    "parent stopped (escalated by a top-level supervisor)",
                    "child stopped (linked parent 'parent' removed)",
                ])
        }
    }

    @Test func reportFailureAppliesTheStrategyFromOutside() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(
                system: system,
                strategy: .oneForOne(decider: { error in
                    (error as? Boom)?.tag == "fatal" ? .stop : .restart
                }))
            let journal = Journal()
            let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
            worker.tell(.work(1))
            _ = try await worker.state()  // a requested restart comes before queued messages
            #expect(try supervisor.reportFailure(id: "worker", error: Boom("transient")) == .restart)
            worker.tell(.work(2))
            #expect(try await worker.state() == WorkerState(instance: 2, handled: [2]))
            #expect(try supervisor.reportFailure(id: "worker", error: Boom("fatal")) == .stop)
            _ = await worker.terminated()
            #expect(!supervisor.contains(id: "worker"))
        }
    }

    // MARK: Scopes

    @Test func oneForOneRestartsOnlyTheFailingChild() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .oneForOne())
            let refs = try ["a", "b", "c"].map { id in try supervisor.superviseWorker(id: id) }
            refs[1].tell(.fail("b"))
            var instances: [Int] = []
            for ref in refs { instances.append(try await ref.state().instance) }
            #expect(instances == [1, 2, 1])
        }
    }

    @Test func allForOneRestartsEveryChild() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .allForOne())
            let events = EventLog(supervisor)
            let journals = [Journal(), Journal(), Journal()]
            let refs = try zip(["a", "b", "c"], journals).map { id, journal in
                try supervisor.supervise(id: id) { Worker(journal) }
            }
            refs[0].tell(.work(1))
            refs[2].tell(.work(3))
            #expect(try await refs[0].state().handled == [1])
            #expect(try await refs[2].state().handled == [3])
            refs[1].tell(.fail("b"))
            await waitUntil("three restart events") { events.count == 3 }
            var states: [WorkerState] = []
            for ref in refs { states.append(try await ref.state()) }
            #expect(states.map(\.instance) == [2, 2, 2])
            #expect(states.allSatisfy { $0.handled.isEmpty }, "fresh state everywhere")
            #expect(
                events.lines == [
                    "b restarted (failed)",
                    "a restarted (sibling 'b' failed)",
                    "c restarted (sibling 'b' failed)",
                ])
            #expect(supervisor.restartCount(of: "a") == 1)
            #expect(supervisor.failureCount(of: "a") == 0)
        }
    }

    @Test func restForOneRestartsTheFailingChildAndThoseSupervisedAfterIt() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .restForOne())
            let events = EventLog(supervisor)
            let refs = try ["a", "b", "c", "d"].map { id in try supervisor.superviseWorker(id: id) }
            refs[1].tell(.fail("b"))
            // Events come after the restarts were ordered: the asks below reach fresh instances.
            await waitUntil("b, c and d restarted") { events.count == 3 }
            #expect(
                events.lines == [
                    "b restarted (failed)", "c restarted (sibling 'b' failed)", "d restarted (sibling 'b' failed)",
                ])
            var instances: [Int] = []
            for ref in refs { instances.append(try await ref.state().instance) }
            #expect(instances == [1, 2, 2, 2])
        }
    }

    @Test func stopWithAllForOneStopsEveryChild() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .allForOne(decider: { _ in .stop }))
            let events = EventLog(supervisor)
            let refs = try ["a", "b", "c"].map { id in try supervisor.superviseWorker(id: id) }
            refs[2].tell(.fail("c"))
            await waitUntil("all stopped") { refs.allSatisfy(\.isStopped) }
            #expect(supervisor.ids.isEmpty)
            #expect(
                events.lines == [
                    "c stopped (failed)", "a stopped (sibling 'c' stopped)", "b stopped (sibling 'c' stopped)",
                ])
        }
    }

    // MARK: Restart intensity

    @Test func exceedingTheIntensityStops() async throws {
        try await withTestSystem { system in
            let intensity = RestartIntensity(maxRestarts: 2, within: .seconds(60))
            let supervisor = Supervisor(system: system, strategy: .oneForOne(intensity: intensity))
            let events = EventLog(supervisor)
            let worker = try supervisor.superviseWorker(id: "worker")
            for round in 1...3 { worker.tell(.fail("\(round)")) }
            let terminated = await worker.terminated()
            #expect(terminated.reason.isFailure)
            #expect(
                events.lines == [
                    "worker restarted (failed)",
                    "worker restarted (failed)",
                    "worker intensity exceeded (2 restarts within 60.0 seconds)",
                    "worker stopped (restart intensity exceeded)",
                ])
            #expect(!supervisor.contains(id: "worker"))
        }
    }

    @Test func exceedingTheIntensityCanEscalate() async throws {
        try await withTestSystem { system in
            let intensity = RestartIntensity(maxRestarts: 1, within: .seconds(60), whenExceeded: .escalate)
            let supervisor = Supervisor(system: system, strategy: .oneForOne(intensity: intensity))
            let events = EventLog(supervisor)
            let worker = try supervisor.superviseWorker(id: "worker")
            worker.tell(.fail("1"))
            worker.tell(.fail("2"))
            _ = await worker.terminated()
            #expect(
                events.lines == [
                    "worker restarted (failed)",
                    "worker intensity exceeded (1 restarts within 60.0 seconds)",
                    "worker escalated (top level)",
                    "worker stopped (escalated by a top-level supervisor)",
                ])
        }
    }

    /// On virtual time: the window is a minute, and the test moves the clock past it.
    @Test func theIntensityWindowSlides() throws {
        let system = DeterministicSystem(seed: 21, configuration: quietConfiguration)
        defer { system.shutdown() }
        let window = Duration.seconds(60)
        let supervisor = Supervisor(
            system: system.system, strategy: .oneForOne(intensity: RestartIntensity(maxRestarts: 1, within: window)))
        let journal = Journal()
        let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
        worker.tell(.failTimed("1"))
        #expect(try system.ask(worker) { .state($0) }.instance == 2)
        system.advance(by: window - .seconds(1))
        worker.tell(.fail("2"))
        system.runUntilIdle()
        #expect(worker.isStopped, "a second restart within the window: more than the intensity allows")

        let journal2 = Journal()
        let worker2 = try supervisor.supervise(id: "worker2") { Worker(journal2) }
        worker2.tell(.failTimed("1"))
        #expect(try system.ask(worker2) { .state($0) }.instance == 2)
        system.advance(by: window + .seconds(1))
        worker2.tell(.fail("2"))
        #expect(try system.ask(worker2) { .state($0) }.instance == 3, "the first restart left the window: allowed")
        #expect(supervisor.restartCount(of: "worker2") == 2)
    }

    @Test func restartsCausedBySiblingsDoNotCountAgainstTheIntensity() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(
                system: system, strategy: .allForOne(intensity: RestartIntensity(maxRestarts: 2, within: .seconds(60))))
            let a = try supervisor.superviseWorker(id: "a")
            let b = try supervisor.superviseWorker(id: "b")
            // Each failure of `a` orders b's restart before `a` handles its next message, and
            // b's ask then comes after that order: two separate restarts of b.
            for round in 1...2 {
                a.tell(.fail("a\(round)"))
                _ = try await a.state()
                #expect(try await b.state().instance == round + 1)
            }
            b.tell(.fail("b1"))
            #expect(try await b.state().instance == 4, "b: two sibling restarts and one of its own")
            #expect(!b.isStopped)
            #expect(supervisor.restartCount(of: "b") == 3)
        }
    }

    // MARK: Backoff

    /// On virtual time: delays of minutes, waited out exactly, in no real time.
    @Test func backoffDelaysGrowAndTheFreshInstanceWaitsThemOut() throws {
        let system = DeterministicSystem(seed: 22, configuration: quietConfiguration)
        defer { system.shutdown() }
        let backoff = RestartBackoff.exponential(
            initial: .seconds(60), maximum: .seconds(3_600), multiplier: 2, jitter: 0, resetAfter: .seconds(36_000))
        let supervisor = Supervisor(system: system.system, strategy: .oneForOne(backoff: backoff))
        let events = EventLog(supervisor)
        let journal = Journal()
        let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
        let expected: [Duration] = [.seconds(60), .seconds(120), .seconds(240)]
        for round in 1...3 {
            worker.tell(.failTimed("\(round)"))
            worker.tell(.work(round))  // waits in the mailbox during the pause
            system.runUntilIdle()
            #expect(journal.restartTimes.count == round - 1, "paused: not restarted before its delay")
            system.advance(by: expected[round - 1] - .seconds(1))
            #expect(journal.restartTimes.count == round - 1, "one second before the delay: still paused")
            system.advance(by: .seconds(1))
            #expect(journal.restartTimes.count == round, "restarted exactly when the delay ran out")
        }
        #expect(events.restartDelays == expected)
        let failed = journal.failureTimes.values
        let restarted = journal.restartTimes.values
        for round in 0..<3 { #expect(restarted[round] - failed[round] == expected[round]) }
        #expect(try system.ask(worker) { .state($0) } == WorkerState(instance: 4, handled: [3]))
        #expect(journal.handled.values == [1, 2, 3], "nothing sent during a pause was lost")
    }

    @Test func withAllForOneTheWholeGroupWaitsTheBackoffAndComesBackTogether() throws {
        let system = DeterministicSystem(seed: 23, configuration: quietConfiguration)
        defer { system.shutdown() }
        let delay = Duration.seconds(80)
        let backoff = RestartBackoff.exponential(initial: delay, maximum: .seconds(1_000), jitter: 0)
        let supervisor = Supervisor(system: system.system, strategy: .allForOne(backoff: backoff))
        let events = EventLog(supervisor)
        let failing = Journal(), sibling = Journal()
        let worker = try supervisor.supervise(id: "failing") { Worker(failing) }
        let other = try supervisor.supervise(id: "sibling") { Worker(sibling) }
        worker.tell(.failTimed("group"))
        other.tell(.work(7))  // queued for the sibling's fresh instance, or handled before the restart
        system.advance(by: delay - .seconds(1))
        #expect(failing.restartTimes.count == 0 && sibling.restartTimes.count == 0, "both wait the backoff")
        system.advance(by: .seconds(1))
        let failedAt = try #require(failing.failureTimes.values.first)
        #expect(try #require(sibling.restartTimes.values.first) - failedAt == delay, "the sibling waited too")
        #expect(try #require(failing.restartTimes.values.first) - failedAt == delay)
        #expect(events.restartDelays == [delay, delay])
        #expect(try system.ask(other) { .state($0) }.instance == 2)
        #expect(sibling.handled.values == [7], "the sibling's message was not lost")
    }

    @Test func backoffResetsAfterAQuietPeriod() throws {
        let system = DeterministicSystem(seed: 24, configuration: quietConfiguration)
        defer { system.shutdown() }
        let quiet = Duration.seconds(600)
        let backoff = RestartBackoff.exponential(
            initial: .seconds(20), maximum: .seconds(1_000), multiplier: 2, jitter: 0, resetAfter: quiet)
        let supervisor = Supervisor(system: system.system, strategy: .oneForOne(backoff: backoff))
        let events = EventLog(supervisor)
        let journal = Journal()
        let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
        worker.tell(.fail("1"))
        worker.tell(.fail("2"))
        system.advance(by: .seconds(60))
        #expect(journal.restartTimes.count == 2)
        system.advance(by: quiet + .seconds(1))
        worker.tell(.fail("3"))
        system.advance(by: .seconds(20))
        #expect(journal.restartTimes.count == 3)
        #expect(events.restartDelays == [.seconds(20), .seconds(40), .seconds(20)])
    }

    @Test func backoffDelayFormula() {
        let backoff = RestartBackoff.exponential(
            initial: .milliseconds(100), maximum: .seconds(1), multiplier: 3, jitter: 0.5)
        #expect(backoff.delay(forConsecutiveRestart: 1, jitterSample: 0) == .milliseconds(100))
        #expect(backoff.delay(forConsecutiveRestart: 2, jitterSample: 0) == .milliseconds(300))
        #expect(backoff.delay(forConsecutiveRestart: 3, jitterSample: 0) == .milliseconds(900))
        #expect(backoff.delay(forConsecutiveRestart: 4, jitterSample: 0) == .seconds(1), "capped at the maximum")
        #expect(backoff.delay(forConsecutiveRestart: 1_000_000, jitterSample: 0) == .seconds(1))
        #expect(backoff.delay(forConsecutiveRestart: 1, jitterSample: 0.5) == .milliseconds(125))
        #expect(backoff.resetAfter == .seconds(1), "resetAfter defaults to the maximum")
        for _ in 0..<100 {
            let jittered = backoff.delay(forConsecutiveRestart: 2)
            #expect(
                jittered >= .milliseconds(300) && jittered <= .milliseconds(450),
                "jitter only adds, at most 50%: \(jittered)")
        }
        #expect(RestartBackoff.none.delay(forConsecutiveRestart: 5) == .zero)
    }

    // MARK: The failing message

    @Test func retryOnceHandsTheFailingMessageToTheFreshInstance() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .oneForOne(failingMessage: .retryOnce))
            let journal = Journal()
            let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
            worker.tell(.work(1))
            worker.tell(.failUnlessFresh(2))  // instance 1 has handled 1: fails; instance 2 handles it
            worker.tell(.work(3))
            #expect(try await worker.state() == WorkerState(instance: 2, handled: [2, 3]))
            #expect(journal.handled.values == [1, 2, 3])
            #expect(system.deadLetters.count(.handlerFailed) == 0)
        }
    }

    @Test func aRetriedMessageThatFailsAgainIsDeadLettered() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .oneForOne(failingMessage: .retryOnce))
            let worker = try supervisor.superviseWorker(id: "worker")
            worker.tell(.fail("always"))
            worker.tell(.work(1))
            #expect(try await worker.state() == WorkerState(instance: 3, handled: [1]))
            #expect(system.deadLetters.count(.handlerFailed) == 1)
        }
    }

    @Test func aChildPolicyOverridesTheStrategy() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)  // dead-letters by default
            let journal = Journal()
            let worker = try supervisor.supervise(id: "worker", policy: ChildPolicy(failingMessage: .retryOnce)) {
                Worker(journal)
            }
            worker.tell(.work(1))
            worker.tell(.failUnlessFresh(2))
            #expect(try await worker.state().handled == [2])
        }
    }

    // MARK: Mailbox and lifecycle

    @Test func theMailboxIsKeptAcrossARestart() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let journal = Journal()
            let gate = Gate()
            let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
            worker.tell(.holdThenFail(gate, "while busy"))
            await waitUntil("the handler is blocked") { gate.entered == 1 }
            for value in 1...100 { worker.tell(.work(value)) }
            gate.open()  // the handler fails now, with 100 messages waiting behind it
            let state = try await worker.state()
            #expect(
                state == WorkerState(instance: 2, handled: Array(1...100)),
                "every queued message reached the fresh instance")
            #expect(journal.handled.values == Array(1...100))
        }
    }

    @Test func lifecycleHooksRunInOrder() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let journal = Journal()
            let worker = try supervisor.supervise(id: "worker") { Worker(journal) }
            worker.tell(.fail("x"))
            _ = try await worker.state()
            try supervisor.unsupervise(id: "worker")
            _ = await worker.terminated()
            #expect(
                journal.log.values == [
                    "started#1",
                    "willRestart#1 Boom(x)",  // on the old instance
                    "didRestart#2 Boom(x)",  // on the fresh one, which then runs `started` (the default)
                    "started#2",
                    "stopped#2",  // when supervision stops it
                ])
        }
    }

    @Test func handlerActorsAreSupervisedToo() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let instances = AtomicCounter()
            let tally = try supervisor.supervise(id: "tally") { Tally(instances: instances) }
            tally.tell(Tally.Add(amount: 5))
            tally.tell(Tally.Explode())
            tally.tell(Tally.Add(amount: 2))
            #expect(try await tally.ask(Tally.Total(), returning: Int.self) == 2)
            #expect(instances.value == 2)
            #expect(supervisor["tally", as: AnyMessage.self] == tally)
        }
    }
}
