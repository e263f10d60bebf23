import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Dead-letter observers and system hooks can be removed, and a dead letter is counted before
/// its sender or asker learns about it.
@Suite struct ObservationTests {
    @Test func aCancelledDeadLetterObserverIsNotCalledAgain() async throws {
        try await withTestSystem { system in
            let seen = Recorder<Int>()
            let observation = system.deadLetters.observe { seen.append($0.message as? Int ?? -1) }
            let probe = system.spawn(Probe<Int>())
            probe.stop()
            await waitUntil { probe.isStopped }
            probe.tell(1)
            observation.cancel()
            #expect(observation.isCancelled)
            probe.tell(2)
            observation.cancel()  // twice is harmless
            #expect(seen.values == [1])
            #expect(system.deadLetters.count(.recipientStopped) == 2, "counting goes on")
        }
    }

    @Test func aCancelledHookIsNotCalledAgain() async throws {
        try await withTestSystem { system in
            let stopped = Recorder<ActorAddress>()
            let observation = system.hooks.onActorStopped { stopped.append($0) }
            let first = system.spawn(Probe<Int>())
            first.stop()
            _ = await first.terminated()
            observation.cancel()
            let second = system.spawn(Probe<Int>())
            second.stop()
            _ = await second.terminated()
            #expect(stopped.values == [first.address])
        }
    }

    /// An asker told of a dead letter (here on the worker that dead-letters the queued
    /// requests of an actor that stopped) already finds it counted.
    @Test func aDeadLetterIsCountedBeforeTheAskerLearnsOfIt() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let server = system.spawn(AskServer(gate: gate))
            server.tell(.block)
            await waitUntil("blocked") { gate.entered == 1 }
            server.tell(.stopSelf)
            let seenCounts = Recorder<Int>()
            for value in 1...10 {
                server.ask(timeout: .seconds(30), { AskServer.Message.double(value, $0) }) {
                    (result: Result<Int, AskError>) in
                    seenCounts.append(
                        result.askError?.kind == .recipientStopped ? system.deadLetters.count(.recipientStopped) : -1)
                }
            }
            gate.open()
            await waitUntil("every ask ended") { seenCounts.count == 10 }
            #expect(seenCounts.values == Array(1...10), "each asker saw its own dead letter counted")
        }
    }
}
