import Logging
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// The dead-letter office: counts per reason, totals, observers.
@Suite struct DeadLetterTests {
    /// Each dead letter is logged at `debug` with structured metadata, when the system's logger
    /// emits `debug`; at the default `info` level nothing is logged (and nothing is boxed).
    @Test(arguments: [Logger.Level.debug, .info])
    func deadLettersAreLoggedWithMetadataAtDebugLevel(level: Logger.Level) async throws {
        let logs = Recorder<LogRecord>()
        try await withTestSystem(logger: recordingLogger(into: logs, level: level)) { system in
            let stopped = system.spawn(Probe<Int>(), options: SpawnOptions(name: "gone"))
            stopped.stop()
            await waitUntil("stopped") { stopped.isStopped }
            #expect(stopped.tell(7) == .deadLettered(.recipientStopped))
            let letters = logs.values.filter { $0.message == "dead letter" }
            if level == .debug {
                #expect(letters.count == 1)
                let metadata = letters.first?.metadata ?? [:]
                #expect(metadata["reason"] == "recipientStopped")
                #expect(metadata["detail"] == "recipient stopped")
                #expect(metadata["message_type"] == "Int")
                #expect(metadata["recipient"].map { "\($0)".hasPrefix("gone#") } == true, "\(metadata)")
                #expect(letters.first?.level == .debug)
            } else {
                #expect(letters.isEmpty)
            }
        }
    }

    @Test func countsEveryReasonSeparatelyAndInTheTotal() async throws {
        let system = makeTestSystem()
        // recipientStopped: 2
        let stopped = system.spawn(Probe<Int>())
        stopped.stop()
        await waitUntil("stopped") { stopped.isStopped }
        stopped.tell(1)
        stopped.tell(2)
        // unhandledMessageType: 1
        let handlers = system.spawn(Account())
        handlers.tell(Unknown(code: 0))
        await waitUntil("unhandled counted") { system.deadLetters.count(.unhandledMessageType) == 1 }
        // mailboxFull: 3 (capacity 1 while the actor is held)
        let gate = Gate()
        let bounded = system.spawn(
            Probe<Int>(gate: gate, holdWhen: { $0 == 0 }),
            options: SpawnOptions(mailbox: .bounded(capacity: 1, overflow: .dropNewest)))
        bounded.tell(0)
        await waitUntil("held") { gate.entered == 1 }
        bounded.tell(1)
        for value in 2...4 { #expect(bounded.tell(value) == .deadLettered(.mailboxFull(.dropNewest))) }
        gate.open()
        // systemShutdown: 1 (told while the shutdown waits for a held actor)
        let shutdownGate = Gate()
        let slow = system.spawn(Probe<Int>(gate: shutdownGate, holdWhen: { _ in true }))
        slow.tell(0)
        await waitUntil("slow actor held") { shutdownGate.entered == 1 }
        let shutdown = Task { await system.shutdown() }
        await waitUntil("shutting down") { system.isShuttingDown }
        #expect(slow.tell(1) == .deadLettered(.systemShutdown))
        shutdownGate.open()
        await shutdown.value

        let office = system.deadLetters
        #expect(office.count(.recipientStopped) == 2)
        #expect(office.count(.unhandledMessageType) == 1)
        #expect(office.count(.mailboxFull) == 3)
        #expect(office.count(.systemShutdown) == 1)
        #expect(office.total == 7)
        #expect(DeadLetterReason.Kind.allCases.reduce(0) { $0 + office.count($1) } == office.total)
    }

    @Test func observersReceiveTheMessageTheRecipientAndTheReason() async throws {
        try await withTestSystem { system in
            let letters = Recorder<DeadLetter>()
            system.deadLetters.observe { letters.append($0) }
            let probe = system.spawn(Probe<String>(), options: SpawnOptions(name: "gone"))
            probe.stop()
            await waitUntil("stopped") { probe.isStopped }
            probe.tell("lost")
            #expect(letters.count == 1, "observers run synchronously on the dead-lettering thread")
            let letter = letters.values[0]
            #expect(letter.message as? String == "lost")
            #expect(letter.recipient == probe.address)
            #expect(letter.recipient.name == "gone")
            #expect(letter.reason == .recipientStopped)
            #expect(letter.description.contains("String"))
            #expect(letter.description.contains("recipient stopped"))
        }
    }

    @Test func everyObserverSeesEveryLaterDeadLetter() async throws {
        try await withTestSystem { system in
            let probe = system.spawn(Probe<Int>())
            probe.stop()
            await waitUntil("stopped") { probe.isStopped }
            probe.tell(0)  // before anyone observes: counted, not observed
            let first = Recorder<Int>(), second = Recorder<Int>()
            system.deadLetters.observe { first.append($0.message as! Int) }
            system.deadLetters.observe { second.append($0.message as! Int) }
            for value in 1...5 { probe.tell(value) }
            #expect(first.values == [1, 2, 3, 4, 5])
            #expect(second.values == [1, 2, 3, 4, 5])
            #expect(system.deadLetters.total == 6)
        }
    }

    @Test func deadLettersFromWorkerThreadsReachObservers() async throws {
        try await withTestSystem { system in
            let letters = Recorder<Int>()
            system.deadLetters.observe { if let value = $0.message as? Int { letters.append(value) } }
            let gate = Gate()
            let probe = system.spawn(Probe<Int>(gate: gate, holdWhen: { $0 == 0 }))
            probe.tell(0)
            await waitUntil("held") { gate.entered == 1 }
            probe.stop()
            // Enqueued behind the stop: dead-lettered by the actor's own turn, on a worker.
            for value in 1...50 { #expect(probe.tell(value) == .enqueued) }
            gate.open()
            await waitUntil("all 50 observed") { letters.count == 50 }
            #expect(letters.values == Array(1...50))
            #expect(system.deadLetters.count(.recipientStopped) == 50)
        }
    }

    @Test func reasonsMapToKindsAndDescribeThemselves() {
        let reasons: [DeadLetterReason] = [
            .recipientStopped, .unhandledMessageType("Foo"), .mailboxFull(.dropOldest), .systemShutdown,
        ]
        #expect(reasons.map(\.kind) == [.recipientStopped, .unhandledMessageType, .mailboxFull, .systemShutdown])
        #expect(Set(reasons.map(\.description)).count == 4)
        #expect(DeadLetterReason.unhandledMessageType("Foo").description.contains("Foo"))
        #expect(DeadLetterReason.mailboxFull(.dropOldest).description.contains("dropOldest"))
        #expect(DeadLetterReason.Kind.allCases.count == 5)
    }

    @Test func aFreshSystemHasNoDeadLetters() async throws {
        try await withTestSystem { system in
            #expect(system.deadLetters.total == 0)
            #expect(DeadLetterReason.Kind.allCases.allSatisfy { system.deadLetters.count($0) == 0 })
        }
    }
}
