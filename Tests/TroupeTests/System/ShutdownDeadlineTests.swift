#if canImport(Glibc)
    import Glibc
#endif
import Testing
import Troupe
import TroupeTestSupport

/// `shutdown(deadline:)` returns by its deadline even when a handler never returns, with a
/// report of the actors that did not stop; their pending messages are dead-lettered, not
/// handled, and the shutdown finishes by itself once the handler returns.
@Suite struct ShutdownDeadlineTests {
    @Test func aShutdownWithinItsDeadlineIsComplete() async throws {
        let system = makeTestSystem()
        let received = Recorder<Int>()
        let probe = system.spawn(Probe<Int>(received: received))
        for value in 0..<100 { probe.tell(value) }
        let report = await system.shutdown(deadline: .seconds(30))
        #expect(report.isComplete)
        #expect(report.unstopped.isEmpty)
        #expect(received.count == 100, "a graceful shutdown still drains every mailbox")
        #expect(report.description == "shutdown complete")
    }

    @Test func aHandlerThatDoesNotReturnIsReportedAndItsPendingMessagesAreDeadLettered() async throws {
        let system = makeTestSystem()
        let gate = Gate(safetyTimeout: .seconds(120))
        let received = Recorder<Int>()
        let stuck = system.spawn(
            Probe<Int>(received: received, gate: gate, holdWhen: { $0 == 0 }),
            options: SpawnOptions(name: "stuck", tracksMailboxDepth: true))
        let other = system.spawn(Probe<Int>())
        stuck.tell(0)
        await waitUntil("the handler is stuck") { gate.entered == 1 }
        for value in 1...5 { stuck.tell(value) }
        other.tell(1)

        let started = ContinuousClock.now
        let report = await system.shutdown(deadline: .milliseconds(200))
        let waited = ContinuousClock.now - started
        #expect(!report.isComplete)
        #expect(report.unstopped.map(\.address) == [stuck.address], "only the stuck actor is left; the other stopped")
        #expect(report.unstopped.first?.pendingMessages == 5)
        #expect(report.description.contains("stuck#") && report.description.contains("(5 queued)"))
        #expect(waited < .seconds(20), "returned at the deadline, not when the handler returned")
        #expect(other.isStopped)
        #expect(!stuck.isStopped)

        // The handler returns: the 5 pending messages are dead letters, the actor stops, and
        // the shutdown finishes by itself (a second shutdown call waits for it).
        gate.open()
        _ = await stuck.terminated()
        await system.shutdown()
        #expect(received.values == [0], "nothing after the deadline was handled")
        #expect(system.deadLetters.count(.systemShutdown) == 5)
        #expect(system.liveActorCount == 0)
    }

    @Test func aSecondCallerWithADeadlineGetsTheSameReport() async throws {
        let system = makeTestSystem()
        let gate = Gate(safetyTimeout: .seconds(120))
        let stuck = system.spawn(Probe<Int>(gate: gate))
        stuck.tell(0)
        await waitUntil("the handler is stuck") { gate.entered == 1 }
        let first = await system.shutdown(deadline: .milliseconds(50))
        let second = await system.shutdown(deadline: .milliseconds(50))
        #expect(first.unstopped.map(\.address) == [stuck.address])
        #expect(second.unstopped.map(\.address) == [stuck.address])
        gate.open()
        await system.shutdown()
        #expect(stuck.isStopped)
    }

    /// A deadline beyond the clock's range (`.seconds(Int64.max)`, say, for "wait as long as it
    /// takes") saturates: it once wrapped into a negative deadline, and the wait's
    /// `deadline - now` trapped while an actor was still running. Run in a child process.
    @Test func aDeadlineBeyondTheClocksRangeWaitsAsLongAsItTakes() async {
        await #expect(processExitsWith: .success) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            let gate = Gate()
            system.spawn(Probe<Int>(gate: gate)).tell(0)
            while gate.entered == 0 { usleep(1000) }
            TestThreads.detach {
                usleep(100_000)  // the handler returns a little after the shutdown began
                gate.open()
            }
            let report = system.shutdownBlocking(deadline: .seconds(Int64.max))
            exit(report.isComplete ? 0 : 1)
        }
    }
}
