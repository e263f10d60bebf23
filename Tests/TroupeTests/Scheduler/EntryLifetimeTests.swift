import Testing
import TroupeTestSupport

@testable import Troupe

/// Run-queue and next-slot entries of a running actor carry no retain (the live-actor list
/// holds its cell); a stopped actor's entries do, and a worker running a turn in which its
/// actor stops holds the cell until the turn ends. These tests free cells at exactly those
/// moments (ASan in CI turns a mistake into a use-after-free report).
@Suite struct EntryLifetimeTests {
    struct StopsOnRequest: ActorDefinition {
        enum Message: Sendable { case ping, stop }
        func receive(_ message: Message, context: ActorContext<Message>) {
            if case .stop = message { context.stop() }
        }
    }

    @Test func actorsThatStopWithNoRefLeftAreFreedAndDeadLetterWhatFollowedTheStop() async throws {
        try await withTestSystem { system in
            let actors = 2_000
            let late = 5
            var cells: [WeakBox<AnyCell>] = []
            for _ in 0..<actors {
                // The ref goes at the end of the iteration: from then on only the live-actor
                // list holds the cell, until the actor stops in its own turn.
                let ref = system.spawn(StopsOnRequest())
                cells.append(WeakBox(ref.cell))
                ref.tell(.ping)
                ref.tell(.stop)
                for _ in 0..<late { ref.tell(.ping) }
            }
            await waitUntil("every actor stopped") { system.liveActorCount == 0 }
            await waitUntil("every late message dead-lettered") {
                system.deadLetters.count(.recipientStopped) == actors * late
            }
            await waitUntil("every cell freed") { cells.allSatisfy { $0.value == nil } }
            #expect(cells.allSatisfy { $0.value == nil })
        }
    }

    /// Sends from several threads while one of them stops the actor; returns once the actor
    /// has terminated, with its ref gone.
    func raceAStop(in system: ActorSystem, senders: Int, perSender: Int) async -> (WeakBox<AnyCell>, Recorder<Int>) {
        let received = Recorder<Int>()
        let ref = system.spawn(Probe<Int>(received: received))
        await TestThreads.run(count: senders) { sender in
            for index in 0..<perSender {
                ref.tell(index)
                if sender == 0 && index == perSender / 2 { ref.stop() }
            }
        }
        _ = await ref.terminated()
        return (WeakBox(ref.cell), received)
    }

    @Test func messagesRacingAStopFromManyThreadsAreAllAccountedForAndTheCellIsFreed() async throws {
        try await withTestSystem { system in
            let senders = 4
            let perSender = 50
            for _ in 0..<200 {
                let before = system.deadLetters.count(.recipientStopped)
                let (cell, received) = await raceAStop(in: system, senders: senders, perSender: perSender)
                await waitUntil("every message handled or dead-lettered") {
                    received.count + system.deadLetters.count(.recipientStopped) - before == senders * perSender
                }
                #expect(received.count + system.deadLetters.count(.recipientStopped) - before == senders * perSender)
                await waitUntil("the cell is freed once its last entry and ref are gone") { cell.value == nil }
                #expect(cell.value == nil)
            }
        }
    }
}
