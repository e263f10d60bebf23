import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// `started` / `stopped` hooks, `SystemHooks.onActorStopped`, the live-actor count.
@Suite struct LifecycleTests {
    @Test func startedRunsBeforeTheFirstMessageEvenWhenMessagesRaceTheSpawn() async throws {
        try await withTestSystem { system in
            // Many actors, each told at once after spawning: `started` must still come first.
            var logs: [Recorder<String>] = []
            for _ in 0..<200 {
                let events = Recorder<String>()
                logs.append(events)
                let probe = system.spawn(Probe<Int>(events: events))
                probe.tell(1)
                probe.tell(2)
            }
            await waitUntil("all handled") { logs.allSatisfy { $0.count == 3 } }
            #expect(logs.allSatisfy { $0.values == ["started", "message", "message"] })
        }
    }

    @Test func startedRunsWithoutAnyMessage() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            system.spawn(Probe<Int>(events: events))
            await waitUntil("started ran") { events.count == 1 }
            #expect(events.values == ["started"])
        }
    }

    @Test func stoppedRunsAfterTheLastMessageAndOnlyOnce() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let received = Recorder<Int>()
            let probe = system.spawn(Probe<Int>(received: received, events: events))
            for value in 0..<500 { probe.tell(value) }
            probe.stop()
            probe.stop()
            await waitUntil("stopped ran") { events.values.last == "stopped" }
            #expect(received.values == Array(0..<500))
            #expect(events.values == ["started"] + Array(repeating: "message", count: 500) + ["stopped"])
        }
    }

    @Test func stoppedRunsWhenTheSystemShutsDown() async throws {
        let system = makeTestSystem()
        let logs = (0..<20).map { _ in Recorder<String>() }
        for events in logs { system.spawn(Probe<Int>(events: events)).tell(0) }
        await system.shutdown()
        #expect(logs.allSatisfy { $0.values == ["started", "message", "stopped"] })
    }

    @Test func onActorStoppedHookFiresAfterTheStoppedHook() async throws {
        try await withTestSystem { system in
            let order = Recorder<String>()
            let stoppedAddresses = Recorder<ActorAddress>()
            system.hooks.onActorStopped { address in
                // `order` first: once the wait below sees the address, "hook" is in `order` too
                // (the other way round, the test read `order` between the two: CI, under ASan).
                order.append("hook")
                stoppedAddresses.append(address)
            }
            let probe = system.spawn(Probe<Int>(events: order), options: SpawnOptions(name: "observed"))
            probe.stop()
            await waitUntil("hook fired") { stoppedAddresses.count == 1 }
            #expect(stoppedAddresses.values == [probe.address])
            #expect(stoppedAddresses.values.first?.name == "observed")
            #expect(order.values == ["started", "stopped", "hook"])
        }
    }

    @Test func everyRegisteredObserverIsCalledForEveryStop() async throws {
        try await withTestSystem { system in
            let first = AtomicCounter(), second = AtomicCounter()
            system.hooks.onActorStopped { _ in first.increment() }
            system.hooks.onActorStopped { _ in second.increment() }
            let probes = (0..<10).map { _ in system.spawn(Probe<Int>()) }
            for probe in probes { probe.stop() }
            await waitUntil("ten stops observed twice") { first.value == 10 && second.value == 10 }
        }
    }

    @Test func liveActorCountFollowsSpawnsAndStops() async throws {
        try await withTestSystem { system in
            #expect(system.liveActorCount == 0)
            let probes = (0..<5).map { _ in system.spawn(Probe<Int>()) }
            #expect(system.liveActorCount == 5)
            probes[0].stop()
            probes[1].stop()
            await waitUntil("two stopped") { system.liveActorCount == 3 }
        }
    }

    @Test func actorsStopCleanlyWhenTheirRefsAreDropped() async throws {
        // Refs are not ownership: a running actor keeps running with no ref left, and its stop
        // (at shutdown) still runs its hook.
        let system = makeTestSystem()
        let events = Recorder<String>()
        do {
            let probe = system.spawn(Probe<Int>(events: events))
            probe.tell(1)
        }
        await waitUntil("message handled with no ref held") { events.count == 2 }
        await system.shutdown()
        #expect(events.values == ["started", "message", "stopped"])
    }
}
