import Testing
import Troupe
import TroupeTestSupport
import TroupeTesting

/// Direct hand-off on the deterministic system: a step's ask of an idle actor runs that actor's
/// turn in place, inside the step, as a worker would; the trace lists it right after the step
/// that asked, marked `ranInPlace`, and a seed still gives one trace.
@Suite struct HandOffScheduleTests {
    /// On `.go`, asks the store for its total (after telling it `.add(first)` when `first` is
    /// given, which makes the store busy before the ask), and records the answer.
    struct Caller: ActorDefinition {
        enum Message: Sendable {
            case go(first: Int?)
            case answered(Result<Int, AskError>)
        }
        let store: ActorRef<Counter.Message>
        let answers: Recorder<Int>
        func receive(_ message: Message, context: ActorContext<Message>) {
            switch message {
            case .go(let first):
                if let first { store.tell(.add(first)) }
                context.ask(store, { .get($0) }, then: { .answered($0) })
            case .answered(let result):
                if case .success(let total) = result { answers.append(total) }
            }
        }
    }

    /// A started store and a started caller, nothing runnable.
    typealias Pair = (store: ActorRef<Counter.Message>, caller: ActorRef<Caller.Message>, answers: Recorder<Int>)

    func makePair(_ system: DeterministicSystem) -> Pair {
        let answers = Recorder<Int>()
        let store = system.spawn(Counter(total: 5))
        let caller = system.spawn(Caller(store: store, answers: answers))
        system.runUntilIdle()
        return (store, caller, answers)
    }

    @Test func aStepsAskOfAnIdleActorRunsItsTurnInPlace() throws {
        let system = DeterministicSystem(seed: 11)
        defer { system.shutdown() }
        let (store, caller, answers) = makePair(system)
        let before = system.trace.count
        caller.tell(.go(first: nil))
        let asking = try #require(system.step())
        #expect(asking.actor == caller.address)
        #expect(!asking.ranInPlace)
        let steps = Array(system.trace.dropFirst(before))
        #expect(steps.count == 2, "the store's turn ran inside the caller's step: \(steps)")
        let inPlace = try #require(steps.last)
        #expect(inPlace.actor == store.address)
        #expect(inPlace.ranInPlace)
        #expect(inPlace.number == asking.number + 1)
        #expect("\(inPlace)".contains("(in place)"))
        // The answer comes back to the caller as a message, in a step of its own.
        #expect(system.driver.runnable == [caller.address])
        system.runUntilIdle()
        #expect(answers.values == [5])
    }

    @Test func aBusyTargetIsQueuedAsUsual() throws {
        let system = DeterministicSystem(seed: 12)
        defer { system.shutdown() }
        let (store, caller, answers) = makePair(system)
        let before = system.trace.count
        caller.tell(.go(first: 2))
        system.runUntilIdle()
        let steps = Array(system.trace.dropFirst(before))
        #expect(!steps.contains { $0.ranInPlace }, "\(steps)")
        #expect(steps.filter { $0.actor == store.address }.count == 2, "the add, then the ask")
        #expect(answers.values == [7])
    }

    @Test func withDirectHandOffOffTheTargetRunsInAStepOfItsOwn() throws {
        var configuration = ActorSystem.Configuration(name: "no-hand-off")
        configuration.directHandOff = false
        let system = DeterministicSystem(seed: 13, configuration: configuration)
        defer { system.shutdown() }
        let (store, caller, answers) = makePair(system)
        let before = system.trace.count
        caller.tell(.go(first: nil))
        system.runUntilIdle()
        let steps = Array(system.trace.dropFirst(before))
        #expect(steps.map(\.actor) == [caller.address, store.address, caller.address])
        #expect(!steps.contains { $0.ranInPlace })
        #expect(answers.values == [5])
    }

    @Test func anAskFromATaskOnTheExecutorIsAnsweredInsideItsStep() throws {
        let system = DeterministicSystem(seed: 14)
        defer { system.shutdown() }
        let (store, _, _) = makePair(system)
        let result = TestLock<Int?>(nil)
        Task(executorPreference: system.system.taskExecutor) {
            let value = try await store.ask { .get($0) }
            result.withLock { $0 = value }
        }
        let before = system.trace.count
        var rounds = 0
        while result.withLock({ $0 }) == nil && rounds < 10_000 {
            if system.step() == nil { usleepMicroseconds(100) }
            rounds += 1
        }
        #expect(result.withLock { $0 } == 5)
        let steps = Array(system.trace.dropFirst(before))
        // The task's job, then the store's turn in place; the task went on in the same job.
        #expect(steps.count == 2, "\(steps)")
        #expect(steps.first?.isSwiftJob == true)
        #expect(steps.last?.actor == store.address)
        #expect(steps.last?.ranInPlace == true)
    }

    /// Three callers ask one store, five rounds, in seeded orders: whether an ask finds the
    /// store idle (in place) or behind another caller's message depends on the order.
    func trace(seed: UInt64) -> [String] {
        let system = DeterministicSystem(seed: seed)
        defer { system.shutdown() }
        let answers = Recorder<Int>()
        let store = system.spawn(Counter())
        let callers = (0..<3).map { _ in system.spawn(Caller(store: store, answers: answers)) }
        system.runUntilIdle()
        for round in 0..<5 {
            for (index, caller) in callers.enumerated() { caller.tell(.go(first: (round + index) % 3 == 0 ? 1 : nil)) }
            system.runUntilIdle()
        }
        #expect(answers.count == 15)
        return system.trace.map { "\($0.actor.id)\($0.ranInPlace ? "*" : "")" }
    }

    @Test func aSeedGivesOneTraceWithItsHandOffs() {
        let first = trace(seed: 21)
        #expect(first.contains { $0.hasSuffix("*") }, "some asks ran in place")
        for _ in 0..<10 { #expect(trace(seed: 21) == first) }
        let others = Set((0..<10).map { trace(seed: UInt64(300 + $0)).joined(separator: ",") })
        #expect(others.count > 1, "different seeds schedule differently")
    }
}
