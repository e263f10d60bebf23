internal import TroupeLocks
import Troupe

/// An actor system whose actors all run on the test's thread, one message at a time, in an
/// order chosen by a seeded generator, on virtual time: the same actor definitions as on the
/// real system, with schedules a test controls and replays.
///
/// ```swift
/// let system = DeterministicSystem(seed: 42)
/// let counter = system.spawn(Counter())
/// counter.tell(.add(2))
/// #expect(try system.ask(counter) { .total($0) } == 2)   // runs actors until answered
/// system.advance(by: .minutes(10))                       // fires what is due, in order
/// system.shutdown()
/// ```
///
/// Nothing runs until the test asks: ``step()`` runs one message of one runnable actor (picked
/// by the generator), ``runUntilIdle(maxSteps:)`` steps until nothing is runnable, and
/// ``advance(by:)`` moves virtual time, firing timers, ask timeouts and delayed restarts in
/// deadline order and running what they make runnable. ``trace`` records every step, and
/// ``description`` starts with the seed: the same seed replays the same schedule.
///
/// What is not modelled: code that runs on other threads (a plain thread or Swift's global
/// executor telling actors while the test steps, `Task.sleep` or I/O inside tasks) is outside
/// the schedule; `askBlocking` would wait forever (nothing runs while the test's thread
/// blocks). Asks work: ``ask(_:timeout:_:)``, or `try await ref.ask` from the test, which
/// runs the system until answered just as that method does. Swift tasks on the system's task
/// executor (`context.run`, `Task(executorPreference: system.taskExecutor)`) run as steps like
/// actors.
/// Dedicated threads are not made, and the stuck-handler watchdog is off.
///
/// Thread-safety: drive it from one thread (the test's).
public final class DeterministicSystem: Sendable, CustomStringConvertible {
    /// The seed of the schedule: run again with it to replay.
    public let seed: UInt64
    /// The system under test.
    public let system: ActorSystem
    /// Its driver (for finer control than this type offers).
    public let driver: ManualDriver
    private let schedule: SeededSchedule

    /// A system scheduled by `seed` (by default a random one, printed by ``description``).
    /// `configuration`'s name, logger, failure decider, ask timeout, services and propagation
    /// are used; its worker settings and batch size are not (one message per step).
    public init(seed: UInt64 = UInt64.random(in: 0...UInt64.max), configuration: ActorSystem.Configuration? = nil) {
        self.seed = seed
        schedule = SeededSchedule(seed: seed)
        driver = ManualDriver()
        driver.setSchedule(schedule)
        var configured = configuration ?? ActorSystem.Configuration(name: "deterministic")
        configured.manualDriver = driver
        system = ActorSystem(configuration: configured)
    }

    /// Spawns an actor (the same as on the real system).
    @discardableResult
    public func spawn<Actor: SpawnableActor>(
        _ actor: sending Actor, options: SpawnOptions = .default
    ) -> ActorRef<Actor.Definition.Message> {
        system.spawn(actor, options: options)
    }

    /// Spawns a restartable actor from a factory (the same as on the real system).
    @discardableResult
    public func spawn<Actor: SpawnableActor>(
        options: SpawnOptions = .default, factory: @escaping @Sendable () -> Actor
    ) -> ActorRef<Actor.Definition.Message> {
        system.spawn(options: options, factory: factory)
    }

    /// The current virtual time (zero when the system was made).
    public var now: Duration { driver.now }

    /// Every step run so far.
    public var trace: [ManualDriver.Step] { driver.trace }

    /// `seed N, M steps, virtual time T`: what a failing test prints to be replayed.
    public var description: String {
        "DeterministicSystem(seed: \(seed)): \(driver.steps) steps, virtual time \(now)"
    }

    /// Keeps `actor` from running until virtual time has moved on by `duration` (its messages
    /// wait in its mailbox): a delayed network, a slow consumer.
    public func hold(_ actor: ActorAddress, for duration: Duration) {
        schedule.hold(actor, until: now + duration)
    }

    /// Runs one message (or Swift job) of one runnable actor, chosen by the seeded generator
    /// among those not held; nil when none can run.
    @discardableResult
    public func step() -> ManualDriver.Step? { driver.step() }

    /// Steps until nothing can run (without moving time); returns the steps run. Traps after
    /// `maxSteps` (an actor that keeps itself busy forever), saying so.
    @discardableResult
    public func runUntilIdle(maxSteps: Int = 1_000_000) -> Int {
        var ran = 0
        while step() != nil {
            ran += 1
            precondition(
                ran < maxSteps,
                "\(self): still running after \(maxSteps) steps; an actor keeps sending itself messages, or raise maxSteps"
            )
        }
        return ran
    }

    /// Runs until idle, then moves virtual time forward by `duration` one deadline at a time:
    /// at each due timer (or ask timeout, delayed restart, held actor's release) it stops the
    /// clock there and runs until idle again. No real time passes.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "DeterministicSystem.advance(by: \(duration)): virtual time only moves forward")
        let target = now + duration
        runUntilIdle()
        while let next = driver.nextEvent, next <= target {
            driver.advance(by: max(.zero, next - now))
            runUntilIdle()
        }
        driver.advance(by: max(.zero, target - now))
        runUntilIdle()
    }

    /// Asks `ref` and runs the system (moving virtual time to the next deadline whenever it is
    /// idle) until the answer or the ask's error arrives. Throws the ask's `AskError`; its
    /// timeout (default: the configuration's) is virtual time. (`try await ref.ask` from the
    /// test does the same; this form needs no `async` context.)
    public func ask<Message: Sendable, Value: Sendable>(
        _ ref: ActorRef<Message>, timeout: Duration? = nil, _ request: (Reply<Value>) -> Message
    ) throws(AskError) -> Value {
        let answer = Locked<Result<Value, AskError>?>(nil)
        ref.ask(timeout: timeout, request) { result in answer.withLock { $0 = result } }
        driver.run(until: { answer.withLock { $0 } != nil }, what: "the answer of \(ref.address)")
        return try answer.withLock { $0 }!.get()
    }

    /// When something next becomes due (a timer, or a held actor's release).
    func nextEvent() -> Duration? { driver.nextEvent }

    /// Shuts the system down on this thread: every actor handles what is in its mailbox, in
    /// order, and stops.
    public func shutdown() {
        system.shutdownBlocking()
    }
}

/// The seeded choice of the next runnable actor, and the actors held back until a time.
final class SeededSchedule: ManualSchedule {
    private let state: Locked<(generator: SeededGenerator, holds: [ActorAddress: Duration])>

    init(seed: UInt64) { state = Locked((SeededGenerator(seed: seed), [:])) }

    func hold(_ actor: ActorAddress, until time: Duration) {
        state.withLock { $0.holds[actor] = time }
    }

    func choose(among runnable: [ActorAddress], at now: Duration) -> Int? {
        state.withLock { state in
            let eligible = runnable.indices.filter { index in
                guard let until = state.holds[runnable[index]] else { return true }
                if until <= now {
                    state.holds[runnable[index]] = nil
                    return true
                }
                return false
            }
            guard !eligible.isEmpty else { return nil }
            return eligible[Int(state.generator.next() % UInt64(eligible.count))]
        }
    }

    func nextRelease(after now: Duration) -> Duration? {
        state.withLock { state in state.holds.values.filter { $0 > now }.min() }
    }
}
