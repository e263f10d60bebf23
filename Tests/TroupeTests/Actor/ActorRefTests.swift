import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// `ActorRef`: tell outcomes, per-sender FIFO, stop, identity.
@Suite struct ActorRefTests {
    @Test func tellToALiveActorIsEnqueuedAndHandled() async throws {
        try await withTestSystem { system in
            let received = Recorder<String>()
            let probe = system.spawn(Probe<String>(received: received))
            #expect(probe.tell("hello") == .enqueued)
            #expect(probe.tell("world").isEnqueued)
            await waitUntil("both handled") { received.count == 2 }
            #expect(received.values == ["hello", "world"])
            #expect(system.deadLetters.total == 0)
        }
    }

    @Test func messagesFromEachOfManyConcurrentSendersArriveInThatSendersOrder() async throws {
        try await withTestSystem { system in
            let producers = 8, perProducer = 20_000
            let violations = AtomicCounter()
            let handled = AtomicCounter()
            let sequencer = system.spawn(
                SequenceChecker(producers: producers, violations: violations, handled: handled))
            await TestThreads.run(count: producers) { producer in
                for sequence in 0..<perProducer {
                    sequencer.tell(SequencedMessage(producer: producer, sequence: sequence))
                }
            }
            await waitUntil("all messages handled") { handled.value == producers * perProducer }
            #expect(violations.value == 0)
            let complete = try await sequencer.ask { SequencedMessage(producer: -1, sequence: 0, reply: $0) } as [Int]
            #expect(complete == Array(repeating: perProducer, count: producers), "each producer's last sequence + 1")
        }
    }

    @Test func tellToAStoppedActorIsDeadLetteredWithRecipientStopped() async throws {
        try await withTestSystem { system in
            let letters = Recorder<DeadLetter>()
            system.deadLetters.observe { letters.append($0) }
            let probe = system.spawn(Probe<Int>())
            probe.stop()
            await waitUntil("stopped") { probe.isStopped }
            #expect(probe.tell(42) == .deadLettered(.recipientStopped))
            #expect(!probe.tell(43).isEnqueued)
            #expect(system.deadLetters.count(.recipientStopped) == 2)
            #expect(letters.values.map { $0.message as? Int } == [42, 43])
            #expect(letters.values.allSatisfy { $0.recipient == probe.address && $0.reason == .recipientStopped })
        }
    }

    @Test func stopLetsEarlierMessagesBeHandledAndDeadLettersLaterOnes() async throws {
        try await withTestSystem { system in
            let gate = Gate()
            let received = Recorder<Int>()
            let events = Recorder<String>()
            let probe = system.spawn(Probe<Int>(received: received, events: events, gate: gate, holdWhen: { $0 == 0 }))
            probe.tell(0)
            await waitUntil("handler holds message 0") { gate.entered == 1 }
            for value in 1...5 { probe.tell(value) }
            probe.stop()
            // Not yet stopped (the stop waits behind 1...5), so these are enqueued and later
            // dead-lettered by the stopped actor.
            #expect(probe.tell(6) == .enqueued)
            #expect(probe.tell(7) == .enqueued)
            gate.open()
            await waitUntil("stopped") { probe.isStopped }
            await waitUntil("two dead letters") { system.deadLetters.count(.recipientStopped) == 2 }
            #expect(received.values == [0, 1, 2, 3, 4, 5])
            #expect(events.values.last == "stopped")
        }
    }

    @Test func stoppingTwiceIsHarmless() async throws {
        try await withTestSystem { system in
            let events = Recorder<String>()
            let probe = system.spawn(Probe<Int>(events: events))
            probe.stop()
            probe.stop()
            await waitUntil("stopped") { probe.isStopped }
            probe.stop()
            // A later actor's stop proves the extra stop messages were processed by now.
            let other = system.spawn(Probe<Int>())
            let otherStopped = Flag()
            system.hooks.onActorStopped { if $0 == other.address { otherStopped.set() } }
            other.stop()
            await waitUntil("other stopped") { otherStopped.isSet }
            #expect(events.values.filter { $0 == "stopped" }.count == 1)
            #expect(system.deadLetters.total == 0, "stop requests are system messages, never dead letters")
        }
    }

    @Test func isStoppedReflectsTheLifecycle() async throws {
        try await withTestSystem { system in
            let probe = system.spawn(Probe<Int>())
            #expect(!probe.isStopped)
            probe.stop()
            await waitUntil("stopped") { probe.isStopped }
            #expect(probe.isStopped)
        }
    }

    @Test func refsAreEqualAndHashByActorIdentity() async throws {
        try await withTestSystem { system in
            let first = system.spawn(Probe<Int>())
            let copy = first
            let second = system.spawn(Probe<Int>())
            #expect(first == copy)
            #expect(first != second)
            #expect(Set([first, copy, second]).count == 2)
            var table: [ActorRef<Int>: String] = [:]
            table[first] = "first"
            table[second] = "second"
            #expect(table[copy] == "first")
            // The actor's own ref (from its context) is the same actor.
            let reporter = system.spawn(SelfReporter())
            let reported = try await reporter.ask { SelfReporter.Message.whoAmI($0) }
            #expect(reported == reporter)
            #expect(reported.address == reporter.address)
        }
    }

    @Test func addressesAreUniqueAndCarryTheName() async throws {
        try await withTestSystem { system in
            let named = system.spawn(Probe<Int>(), options: SpawnOptions(name: "worker-7"))
            let anonymous = system.spawn(Probe<Int>())
            #expect(named.address.name == "worker-7")
            #expect(anonymous.address.name == nil)
            #expect(named.address.id != anonymous.address.id)
            #expect(named.address.description.contains("worker-7"))
            #expect(named.description.contains("worker-7"))
            let ids = Set((0..<100).map { _ in system.spawn(Probe<Int>()).address.id })
            #expect(ids.count == 100)
            #expect(named.system === system)
        }
    }

    @Test func tellFromInsideAHandlerReachesAnotherActor() async throws {
        try await withTestSystem { system in
            let received = Recorder<Int>()
            let sink = system.spawn(Probe<Int>(received: received))
            let forwarder = system.spawn(Forwarder(target: sink))
            for value in 0..<1000 { forwarder.tell(value) }
            await waitUntil("all forwarded messages handled") { received.count == 1000 }
            #expect(received.values == (0..<1000).map { $0 * 2 })
        }
    }

    @Test func messagesToActorsOfAnotherSystemAreDelivered() async throws {
        let first = makeTestSystem(name: "first")
        let second = makeTestSystem(name: "second")
        let received = Recorder<Int>()
        let sink = second.spawn(Probe<Int>(received: received))
        let forwarder = first.spawn(Forwarder(target: sink))
        for value in 0..<500 { forwarder.tell(value) }
        await waitUntil("cross-system messages handled") { received.count == 500 }
        #expect(received.values == (0..<500).map { $0 * 2 })
        await first.shutdown()
        await second.shutdown()
    }
}

// MARK: - Test actors

struct SequencedMessage: Sendable {
    let producer: Int
    let sequence: Int
    var reply: Reply<[Int]>? = nil
}

/// Checks that each producer's sequence numbers arrive strictly increasing and contiguous.
struct SequenceChecker: ActorDefinition {
    let violations: AtomicCounter
    let handled: AtomicCounter
    var next: [Int]

    init(producers: Int, violations: AtomicCounter, handled: AtomicCounter) {
        self.violations = violations
        self.handled = handled
        next = Array(repeating: 0, count: producers)
    }

    mutating func receive(_ message: SequencedMessage, context: ActorContext<SequencedMessage>) {
        if let reply = message.reply {
            reply.succeed(next)
            return
        }
        if message.sequence != next[message.producer] { violations.increment() }
        next[message.producer] = message.sequence + 1
        handled.increment()
    }
}

struct SelfReporter: ActorDefinition {
    enum Message: Sendable { case whoAmI(Reply<ActorRef<Message>>) }
    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .whoAmI(let reply): reply.succeed(context.ref)
        }
    }
}

struct Forwarder: ActorDefinition {
    let target: ActorRef<Int>
    mutating func receive(_ message: Int, context: ActorContext<Int>) { target.tell(message * 2) }
}
