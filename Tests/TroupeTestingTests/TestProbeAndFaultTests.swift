import Testing
import Troupe
import TroupeTestSupport
import TroupeTesting

/// Probes and injected faults.
@Suite struct TestProbeAndFaultTests {
    /// Forwards every number it gets, doubled, to a listener; answers lookups through a backend.
    struct Doubler: ActorDefinition {
        enum Message: Sendable {
            case number(Int)
            case lookup(String)
        }
        let listener: ActorRef<Int>
        let backend: ActorRef<Backend>
        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .number(let n): listener.tell(n * 2)
            case .lookup(let key):
                context.ask(backend, { .find(key, $0) }) { .number((try? $0.get()) ?? -1) }
            }
        }
    }

    enum Backend: Sendable {
        case find(String, Reply<Int>)
    }

    @Test func aProbeReceivesExpectsAndAnswers() throws {
        let system = DeterministicSystem(seed: 11)
        defer { system.shutdown() }
        let listener = TestProbe<Int>(in: system, name: "listener")
        let backend = TestProbe<Backend>(in: system, name: "backend")
        let doubler = system.spawn(Doubler(listener: listener.ref, backend: backend.ref))
        doubler.tell(.number(21))
        try listener.expectMessage(42)
        try listener.expectNoMessage(for: .seconds(30))
        #expect(system.now >= .seconds(30))

        doubler.tell(.lookup("tea"))
        guard case .find(let key, let reply) = try backend.expectMessage() else { return }
        #expect(key == "tea")
        reply.succeed(7)
        try listener.expectMessage(14)
    }

    @Test func anExpectationThatFailsSaysWhatAndTheSeed() {
        let system = DeterministicSystem(seed: 12)
        defer { system.shutdown() }
        let probe = TestProbe<Int>(in: system)
        do {
            try probe.expectMessage(within: .seconds(2))
            Issue.record("a message arrived")
        } catch {
            #expect("\(error)".contains("received nothing within 2.0 seconds"))
            #expect("\(error)".contains("seed: 12"))
        }
        probe.ref.tell(5)
        do {
            try probe.expectNoMessage(for: .seconds(1))
            Issue.record("no message seen")
        } catch {
            #expect("\(error)".contains("received 5 where no message was expected"))
        }
    }

    @Test func faultsFailAHandlerAtItsNthMessageDropAndStop() throws {
        var configuration = ActorSystem.Configuration(name: "faults")
        configuration.failureDecider = { _ in .resume }
        configuration.logger = quietLogger
        let system = DeterministicSystem(seed: 13, configuration: configuration)
        defer { system.shutdown() }
        let failures = TestLock<[Int]>([])
        system.system.hooks.onActorFailed { failure, _ in failures.withLock { $0.append(failure.failureCount) } }
        let counter = system.spawn(
            FaultInjected(
                Counter(),
                faults: [
                    .fail(atMessage: 2), .drop { if case .add(let n) = $0 { n == 100 } else { false } },
                    .stop(afterMessage: 6),
                ]))
        counter.tell(.add(1))  // 1: handled
        counter.tell(.add(10))  // 2: fails (injected)
        counter.tell(.add(100))  // 3: dropped
        counter.tell(.add(1000))  // 4: handled
        #expect(try system.ask(counter) { .get($0) } == 1001)  // 5
        counter.tell(.add(1))  // 6: handled, then the actor stops
        system.runUntilIdle()
        #expect(failures.withLock { $0 } == [1])
        #expect(counter.isStopped)
        counter.tell(.add(1))
        #expect(system.system.deadLetters.count(.recipientStopped) == 1)
    }
}
