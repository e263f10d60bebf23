import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Bounded mailboxes: each overflow policy's outcome values, which messages are dropped, dead
/// letter counts, and that system messages are neither counted nor dropped.
///
/// Every test fills the mailbox deterministically: message 0 holds the handler at a gate (it has
/// left the mailbox by then), so exactly `capacity` later messages fit.
@Suite struct BoundedMailboxTests {
    static let capacity = 4

    /// Spawns a held, bounded probe: returns once the handler holds message 0.
    func heldProbe(
        _ system: ActorSystem, policy: MailboxOverflowPolicy, received: Recorder<Int>, gate: Gate
    ) async -> ActorRef<Int> {
        let probe = system.spawn(
            Probe<Int>(received: received, gate: gate, holdWhen: { $0 == 0 }),
            options: SpawnOptions(mailbox: .bounded(capacity: Self.capacity, overflow: policy)))
        #expect(probe.tell(0) == .enqueued)
        await waitUntil("handler holds message 0") { gate.entered == 1 }
        return probe
    }

    @Test func dropNewestRejectsTheNewMessages() async throws {
        try await withTestSystem { system in
            let letters = Recorder<DeadLetter>()
            system.deadLetters.observe { letters.append($0) }
            let gate = Gate(), received = Recorder<Int>()
            let probe = await heldProbe(system, policy: .dropNewest, received: received, gate: gate)
            let outcomes = (1...7).map { probe.tell($0) }
            #expect(
                outcomes == Array(repeating: .enqueued, count: 4)
                    + Array(repeating: .deadLettered(.mailboxFull(.dropNewest)), count: 3))
            #expect(system.deadLetters.count(.mailboxFull) == 3)
            #expect(letters.values.map { $0.message as? Int } == [5, 6, 7])
            #expect(
                letters.values.allSatisfy { $0.reason == .mailboxFull(.dropNewest) && $0.recipient == probe.address })
            gate.open()
            await waitUntil("drained") { received.count == 5 }
            #expect(received.values == [0, 1, 2, 3, 4])
            #expect(system.deadLetters.total == 3)
        }
    }

    @Test func dropOldestEnqueuesTheNewMessageAndDeadLettersTheOldestPending() async throws {
        try await withTestSystem { system in
            let letters = Recorder<DeadLetter>()
            system.deadLetters.observe { letters.append($0) }
            let gate = Gate(), received = Recorder<Int>()
            let probe = await heldProbe(system, policy: .dropOldest, received: received, gate: gate)
            let outcomes = (1...7).map { probe.tell($0) }
            #expect(
                outcomes == Array(repeating: .enqueued, count: 4)
                    + Array(repeating: .enqueuedDroppingOldest, count: 3))
            #expect(outcomes.allSatisfy { $0.isEnqueued })
            gate.open()
            await waitUntil("drained") { received.count == 5 }
            await waitUntil("three dead letters") { system.deadLetters.count(.mailboxFull) == 3 }
            #expect(received.values == [0, 4, 5, 6, 7], "the newest `capacity` messages survive")
            #expect(letters.values.map { $0.message as? Int } == [1, 2, 3])
            #expect(letters.values.allSatisfy { $0.reason == .mailboxFull(.dropOldest) })
            #expect(system.deadLetters.total == 3)
        }
    }

    @Test func failRefusesTheNewMessages() async throws {
        try await withTestSystem { system in
            let letters = Recorder<DeadLetter>()
            system.deadLetters.observe { letters.append($0) }
            let gate = Gate(), received = Recorder<Int>()
            let probe = await heldProbe(system, policy: .fail, received: received, gate: gate)
            let outcomes = (1...6).map { probe.tell($0) }
            #expect(
                outcomes == Array(repeating: .enqueued, count: 4)
                    + Array(repeating: .deadLettered(.mailboxFull(.fail)), count: 2))
            #expect(!outcomes[5].isEnqueued)
            #expect(system.deadLetters.count(.mailboxFull) == 2)
            #expect(letters.values.map { $0.message as? Int } == [5, 6])
            gate.open()
            await waitUntil("drained") { received.count == 5 }
            #expect(received.values == [0, 1, 2, 3, 4])
        }
    }

    @Test(arguments: [MailboxOverflowPolicy.dropNewest, .dropOldest, .fail])
    func capacityIsAvailableAgainOnceTheMailboxDrains(policy: MailboxOverflowPolicy) async throws {
        try await withTestSystem { system in
            let received = Recorder<Int>()
            let actor = system.spawn(
                Holdable(received: received),
                options: SpawnOptions(mailbox: .bounded(capacity: Self.capacity, overflow: policy)))
            for round in 0..<3 {
                let gate = Gate()
                #expect(actor.tell(.hold(gate)) == .enqueued)
                await waitUntil("held in round \(round)") { gate.entered == 1 }
                let outcomes = (0..<Self.capacity).map { actor.tell(.value(round * 100 + $0)) }
                #expect(outcomes == Array(repeating: .enqueued, count: Self.capacity), "round \(round)")
                #expect(actor.tell(.value(-1)) != .enqueued, "full in round \(round)")
                gate.open()
                await waitUntil("drained in round \(round)") {
                    actor.mailboxDepth == 0 && received.count == (round + 1) * Self.capacity
                }
            }
            #expect(system.deadLetters.count(.mailboxFull) == 3)
        }
    }

    @Test func stopIsAcceptedByAFullMailboxAndRunsAfterThePendingMessages() async throws {
        try await withTestSystem { system in
            let gate = Gate(), received = Recorder<Int>()
            let probe = await heldProbe(system, policy: .fail, received: received, gate: gate)
            for value in 1...Self.capacity { probe.tell(value) }
            probe.stop()  // a system message: never refused, never counted against the capacity
            gate.open()
            await waitUntil("stopped") { probe.isStopped }
            #expect(received.values == [0, 1, 2, 3, 4])
            #expect(system.deadLetters.total == 0)
        }
    }

    /// System messages must not change the capacity: a bounded parent that received
    /// `childStopped` notices still accepts exactly `capacity` messages.
    @Test func systemMessagesDoNotFreeBoundedCapacity() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let childrenStopped = AtomicCounter()
            system.hooks.onActorStopped { _ in childrenStopped.increment() }
            let parent = system.spawn(
                BoundedParent(gate: gate),
                options: SpawnOptions(mailbox: .bounded(capacity: 2, overflow: .fail)))
            // Three children that stop at once: three `childStopped` system messages for the
            // parent, all pushed before the stop hook observer runs.
            #expect(parent.tell(.spawnShortLivedChildren(3)) == .enqueued)
            await waitUntil("children stopped") { childrenStopped.value == 3 }
            // Handled after the three notices (FIFO), so they have been consumed by now.
            let answer1 = try await parent.ask { BoundedParent.Message.ping($0) }
            #expect(answer1)
            parent.tell(.block)
            await waitUntil("parent held") { gate.entered == 1 }
            let outcomes = (0..<5).map { _ in parent.tell(.noop) }
            gate.open()
            #expect(outcomes.filter { $0.isEnqueued }.count == 2, "capacity 2, got outcomes \(outcomes)")
        }
    }

    @Test func capacityOfZeroIsAProgrammingError() async {
        await #expect(processExitsWith: .failure) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            system.spawn(Probe<Int>(), options: SpawnOptions(mailbox: .bounded(capacity: 0, overflow: .fail)))
        }
    }

    @Test func mailboxKindsAndPoliciesCompare() {
        #expect(MailboxKind.bounded(capacity: 3, overflow: .fail) == .bounded(capacity: 3, overflow: .fail))
        #expect(MailboxKind.bounded(capacity: 3, overflow: .fail) != .bounded(capacity: 3, overflow: .dropOldest))
        #expect(MailboxKind.unbounded != .bounded(capacity: 1, overflow: .fail))
        #expect(SpawnOptions.default.mailbox == .unbounded)
        #expect(SpawnOptions.default.executor == .shared)
    }
}

struct BoundedParent: ActorDefinition {
    enum Message: Sendable {
        case spawnShortLivedChildren(Int)
        case ping(Reply<Bool>)
        case block
        case noop
    }

    let gate: Gate

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .spawnShortLivedChildren(let count):
            for _ in 0..<count { context.spawn(Probe<Int>()).stop() }
        case .ping(let reply): reply.succeed(true)
        case .block: gate.enter()
        case .noop: break
        }
    }
}

/// Holds at the gate carried by a `.hold` message; records `.value`s.
struct Holdable: ActorDefinition {
    enum Message: Sendable {
        case hold(Gate)
        case value(Int)
    }

    let received: Recorder<Int>

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .hold(let gate): gate.enter()
        case .value(let value): received.append(value)
        }
    }
}
