import Testing
import Troupe
import TroupeSupervision
import TroupeTestSupport

/// Typed access by id, the typed errors, unsupervising, links, explicit restarts and events.
@Suite struct AccessAndLinkTests {
    // MARK: Access and errors

    /// The typed subscript of 0.1 still compiles (deprecated) and still answers by type.
    @available(*, deprecated, message: "exercises the deprecated typed subscript")
    @Test func theDeprecatedTypedSubscriptStillWorks() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, name: "root")
            let worker = try supervisor.superviseWorker(id: "worker")
            _ = try supervisor.supervisePool(id: "pool", size: 1) { _ in Worker(Journal()) }
            let typed: ActorRef<Worker.Message>? = supervisor["worker"]
            #expect(typed == worker)
            let wrongType: ActorRef<Int>? = supervisor["worker"]
            #expect(wrongType == nil, "a wrong message type reads as nil, as in 0.1")
            let pool: ActorRef<Worker.Message>? = supervisor["pool"]
            #expect(pool == nil, "a pool is not an actor")
            let missing: ActorRef<Worker.Message>? = supervisor["missing"]
            #expect(missing == nil)
            // The untyped subscript is still the one chosen where no type is asked for.
            #expect(supervisor["worker"]?.address == worker.address)
        }
    }

    @Test func childrenAreReachedByIdWithTheirType() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, name: "root")
            let worker = try supervisor.superviseWorker(id: "worker")
            let pool = try supervisor.supervisePool(id: "pool", size: 2) { _ in Worker(Journal()) }
            let nested = try supervisor.superviseSupervisor(id: "nested")

            let typed = try supervisor["worker"]?.ref(as: Worker.Message.self)
            #expect(typed == worker)
            #expect(supervisor["worker"]?.address == worker.address)
            #expect(supervisor["pool"] == nil, "a pool is not an actor")
            #expect(supervisor["missing"] == nil)
            // Untyped access checks the message type where it is used, and says which it is.
            #expect(try supervisor["worker"]?.tell(Worker.Message.work(7)) == .enqueued)
            #expect(
                throws: SupervisionError.typeMismatch(
                    id: "worker", expected: "an actor accepting String", actual: "ActorRef<Message>")
            ) {
                try supervisor["worker"]?.tell("not a worker message")
            }
            #expect(
                throws: SupervisionError.typeMismatch(
                    id: "worker", expected: "ActorRef<Int>", actual: "ActorRef<Message>")
            ) {
                try supervisor["worker"]?.ref(as: Int.self)
            }
            #expect(supervisor["worker", as: Worker.Message.self] == worker)
            #expect(supervisor["worker", as: Int.self] == nil, "a wrong message type reads as nil")
            #expect(supervisor["pool", as: Worker.Message.self] == nil, "a pool is not an actor")
            #expect(supervisor["missing", as: Worker.Message.self] == nil)
            #expect(try supervisor.ref(id: "worker", as: Worker.Message.self) == worker)
            #expect(try supervisor.pool(id: "pool", as: Worker.Message.self) === pool)
            #expect(try supervisor.supervisor(id: "nested") === nested)
            #expect(nested.name == "root/nested")
            #expect(nested.parent === supervisor)
            #expect(supervisor.ids == ["worker", "pool", "nested"])
            #expect(supervisor.contains(id: "pool"))

            #expect(
                throws: SupervisionError.typeMismatch(
                    id: "worker", expected: "ActorRef<Int>", actual: "ActorRef<Message>")
            ) {
                try supervisor.ref(id: "worker", as: Int.self)
            }
            #expect(
                throws: SupervisionError.typeMismatch(
                    id: "worker", expected: "ActorPool<Message>", actual: "ActorRef<Message>")
            ) {
                try supervisor.pool(id: "worker", as: Worker.Message.self)
            }
            #expect(
                throws: SupervisionError.typeMismatch(id: "pool", expected: "Supervisor", actual: "ActorPool<Message>")
            ) {
                try supervisor.supervisor(id: "pool")
            }
            #expect(throws: SupervisionError.unknownID("missing", supervisor: "root")) {
                try supervisor.ref(id: "missing", as: Worker.Message.self)
            }
        }
    }

    @Test func misuseIsRefusedWithTypedErrorsThatSayWhatToDo() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, name: "root")
            try supervisor.superviseWorker(id: "worker")
            do throws(SupervisionError) {
                try supervisor.superviseWorker(id: "worker")
                Issue.record("a duplicate id was accepted")
            } catch {
                #expect(error == .duplicateID("worker", supervisor: "root"))
                #expect(error.description.contains("unsupervise(id: \"worker\")"))
            }
            #expect(throws: SupervisionError.emptyID(supervisor: "root")) { try supervisor.superviseWorker(id: "") }
            #expect(throws: SupervisionError.failureDeciderNotAllowed(id: "custom")) {
                try supervisor.superviseWorker(id: "custom", options: SpawnOptions(failureDecider: { _ in .resume }))
            }
            #expect(throws: SupervisionError.selfInvalidatingNotSupported(id: "lease")) {
                try supervisor.superviseWorker(id: "lease", options: SpawnOptions(selfInvalidating: true))
            }
            #expect(throws: SupervisionError.invalidPool(id: "empty", .invalidSize(0))) {
                try supervisor.supervisePool(id: "empty", size: 0) { _ in Worker(Journal()) }
            }
            #expect(!supervisor.contains(id: "empty"), "a refused pool leaves no trace")
            let unknown = SupervisionError.unknownID("ghost", supervisor: "root")
            #expect(throws: unknown) { try supervisor.unsupervise(id: "ghost") }
            #expect(throws: unknown) { try supervisor.restart(id: "ghost") }
            #expect(throws: unknown) { try supervisor.reportFailure(id: "ghost", error: Boom("x")) }
            #expect(throws: unknown) { try supervisor.link("ghost", toParent: "worker") }
            #expect(throws: unknown) { try supervisor.link("worker", toParent: "ghost") }
            #expect(throws: unknown) { try supervisor.linkedChildren(of: "ghost") }
            #expect(unknown.description.contains("'ghost'"))
            #expect(supervisor.restartCount(of: "ghost") == nil)
            #expect(supervisor.ids == ["worker"], "refused children were never added")
        }
    }

    @Test func unsuperviseStopsTheActorAndFreesTheId() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let journal = Journal()
            let worker = try supervisor.superviseWorker(id: "worker", journal: journal)
            worker.tell(.work(1))
            try supervisor.unsupervise(id: "worker")
            _ = await worker.terminated()
            #expect(journal.handled.values == [1], "messages sent before unsupervising are still handled")
            #expect(supervisor["worker", as: Worker.Message.self] == nil)
            #expect(events.lines == ["worker stopped (unsupervised)"])
            let again = try supervisor.superviseWorker(id: "worker")
            #expect(again != worker)
        }
    }

    @Test func aChildThatStopsByItselfLeavesAndKeepsItsLinkedChildren() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let parent = try supervisor.superviseWorker(id: "parent")
            let child = try supervisor.superviseWorker(id: "child")
            try supervisor.link("child", toParent: "parent")
            parent.stop()
            await waitUntil("the parent left") { !supervisor.contains(id: "parent") }
            // The event is published after the child leaves the table (outside its lock).
            await waitUntil("the event") { !events.lines.isEmpty }
            #expect(events.lines == ["parent terminated (stopped)"])
            #expect(!child.isStopped, "a stop that supervision did not make does not cascade")
            #expect(supervisor.ids == ["child"])
        }
    }

    @Test func stopAllStopsEveryChildAndTheSupervisorStaysUsable() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let refs = try ["a", "b"].map { try supervisor.superviseWorker(id: $0) }
            supervisor.stopAll()
            await waitUntil("all stopped") { refs.allSatisfy(\.isStopped) }
            #expect(supervisor.ids.isEmpty)
            #expect(!supervisor.isStopped)
            try supervisor.superviseWorker(id: "a")
            #expect(supervisor.ids == ["a"])
        }
    }

    // MARK: Links

    @Test func aParentsRestartRestartsItsLinkedChildrenRecursively() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let refs = try ["a", "b", "c", "d"].map { try supervisor.superviseWorker(id: $0) }
            try supervisor.link("b", toParent: "a")
            try supervisor.link("c", toParent: "b")
            #expect(try supervisor.linkedChildren(of: "a") == ["b"])
            refs[0].tell(.fail("a"))
            await waitUntil("three restarts") { events.count == 3 }
            #expect(
                events.lines == [
                    "a restarted (failed)", "b restarted (linked parent 'a' restarted)",
                    "c restarted (linked parent 'b' restarted)",
                ])
            var instances: [Int] = []
            for ref in refs { instances.append(try await ref.state().instance) }
            #expect(instances == [2, 2, 2, 1])

            refs[2].tell(.fail("c"))  // a linked child's failure does not touch its parents
            #expect(try await refs[2].state().instance == 3)
            #expect(try await refs[0].state().instance == 2)
            #expect(try await refs[1].state().instance == 2)
        }
    }

    @Test func unlinkStopsThePropagation() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let parent = try supervisor.superviseWorker(id: "parent")
            let child = try supervisor.superviseWorker(id: "child")
            try supervisor.link("child", toParent: "parent")
            try supervisor.link("child", toParent: "parent")  // harmless
            try supervisor.unlink("child", fromParent: "parent")
            #expect(try supervisor.linkedChildren(of: "parent").isEmpty)
            #expect(throws: SupervisionError.notLinked(child: "child", parent: "parent")) {
                try supervisor.unlink("child", fromParent: "parent")
            }
            parent.tell(.fail("x"))
            #expect(try await parent.state().instance == 2)
            #expect(try await child.state().instance == 1)
        }
    }

    @Test func cyclesAreRefused() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            for id in ["a", "b", "c"] { try supervisor.superviseWorker(id: id) }
            try supervisor.link("b", toParent: "a")
            try supervisor.link("c", toParent: "b")
            #expect(throws: SupervisionError.linkCycle(child: "a", parent: "c")) {
                try supervisor.link("a", toParent: "c")
            }
            #expect(throws: SupervisionError.linkCycle(child: "a", parent: "a")) {
                try supervisor.link("a", toParent: "a")
            }
            try supervisor.link("c", toParent: "a")  // a diamond is not a cycle
            #expect(try supervisor.linkedChildren(of: "a") == ["b", "c"])
        }
    }

    @Test func unsupervisingAParentRemovesItsLinkedChildrenRecursively() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let events = EventLog(supervisor)
            let refs = try ["a", "b", "c", "other"].map { try supervisor.superviseWorker(id: $0) }
            try supervisor.link("b", toParent: "a")
            try supervisor.link("c", toParent: "b")
            try supervisor.unsupervise(id: "a")
            await waitUntil("a, b, c stopped") { refs[0...2].allSatisfy(\.isStopped) }
            #expect(!refs[3].isStopped)
            #expect(supervisor.ids == ["other"])
            #expect(
                events.lines == [
                    "a stopped (unsupervised)", "b stopped (linked parent 'a' removed)",
                    "c stopped (linked parent 'b' removed)",
                ])
        }
    }

    @Test func stoppingAParentBySupervisionStopsItsLinkedChildren() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system, strategy: .oneForOne(decider: { _ in .stop }))
            let parent = try supervisor.superviseWorker(id: "parent")
            let child = try supervisor.superviseWorker(id: "child")
            try supervisor.link("child", toParent: "parent")
            parent.tell(.fail("x"))
            _ = await child.terminated()
            #expect(supervisor.ids.isEmpty)
        }
    }

    @Test func anExplicitRestartRestartsLinkedChildrenAndIgnoresTheIntensity() async throws {
        try await withTestSystem { system in
            let noRestarts = RestartIntensity(maxRestarts: 0, within: .seconds(60))
            let supervisor = Supervisor(system: system, strategy: .allForOne(intensity: noRestarts))
            let events = EventLog(supervisor)
            let journal = Journal()
            let parent = try supervisor.superviseWorker(id: "parent", journal: journal)
            let child = try supervisor.superviseWorker(id: "child")
            let sibling = try supervisor.superviseWorker(id: "sibling")
            try supervisor.link("child", toParent: "parent")
            try supervisor.restart(id: "parent", reason: Boom("maintenance"))
            #expect(try await parent.state().instance == 2)
            #expect(try await child.state().instance == 2)
            #expect(try await sibling.state().instance == 1, "an explicit restart ignores the scope")
            #expect(journal.log.values.contains("willRestart#1 Boom(maintenance)"))
            #expect(
                events.lines == [
                    "parent restarted (restart requested)", "child restarted (linked parent 'parent' restarted)",
                ])
        }
    }

    // MARK: Events

    @Test func eventsArriveAsAnAsyncSequence() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(
                system: system,
                strategy: .oneForOne(decider: { error in
                    (error as? Boom)?.tag == "soft" ? .resume : .restart
                }))
            let stream = supervisor.events()
            let worker = try supervisor.superviseWorker(id: "worker")
            worker.tell(.fail("soft"))
            worker.tell(.fail("hard"))
            var iterator = stream.makeAsyncIterator()
            let first = await iterator.next()
            let second = await iterator.next()
            #expect(first.map { "\($0.kind)" } == "resumed")
            #expect((first?.error as? Boom)?.tag == "soft")
            #expect(second?.isRestart == true)
            #expect(second?.supervisor == "supervisor")
            #expect(second?.description == "supervisor/worker restarted (failed): Boom(hard) [\(worker.address)]")
        }
    }

    @Test func aCancelledObservationGetsNoMoreEvents() async throws {
        try await withTestSystem { system in
            let supervisor = Supervisor(system: system)
            let seen = AtomicCounter()
            let observation = supervisor.observe { _ in seen.increment() }
            let witness = EventLog(supervisor)
            let worker = try supervisor.superviseWorker(id: "worker")
            worker.tell(.fail("1"))
            _ = try await worker.state()
            observation.cancel()
            observation.cancel()
            worker.tell(.fail("2"))
            _ = try await worker.state()
            #expect(witness.count == 2)
            #expect(seen.value == 1)
        }
    }
}
