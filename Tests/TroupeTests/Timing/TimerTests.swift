#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
import Testing
import Troupe
import TroupeTestSupport

/// Actor timers: single and periodic messages to self by key, cancel, replace, cancelled on
/// stop and restart.
@Suite struct TimerTests {
    @Test func aSingleTimerDeliversItsMessageOnceAfterTheDelay() async throws {
        try await withTestSystem { system in
            let ticks = Recorder<String>()
            let clock = Recorder<Duration>()
            let start = ContinuousClock.now
            let actor = system.spawn(Ticker(ticks: ticks, onTick: { clock.append(ContinuousClock.now - start) }))
            actor.tell(.startSingle(key: "a", tag: "once", after: .milliseconds(30)))
            await waitUntil("fired") { ticks.count == 1 }
            #expect(ticks.values == ["once"])
            #expect(clock.values[0] >= .milliseconds(30), "fired no earlier than its delay")
            let active = try await actor.ask { Ticker.Message.isActive("a", $0) }
            #expect(!active, "a single timer is done once its message was handled")
        }
    }

    @Test func aPeriodicTimerRepeatsUntilCancelled() async throws {
        try await withTestSystem { system in
            let ticks = Recorder<String>()
            let actor = system.spawn(Ticker(ticks: ticks))
            actor.tell(.startPeriodic(key: "p", tag: "tick", every: .milliseconds(5)))
            await waitUntil("several ticks") { ticks.count >= 5 }
            _ = try await actor.ask { Ticker.Message.cancel("p", $0) }
            let afterCancel = ticks.count
            // Another timer, fired later than a tick would have, proves time has passed.
            actor.tell(.startSingle(key: "probe", tag: "probe", after: .milliseconds(40)))
            await waitUntil("probe") { ticks.values.contains("probe") }
            #expect(ticks.count == afterCancel + 1, "no tick after cancel")
        }
    }

    /// A periodic timer whose interval is zero or less ticks once and ends, like a single timer
    /// (it used to become a 1 µs timer: thousands of ticks).
    @Test(arguments: [Duration.zero, .milliseconds(-5)])
    func aPeriodicTimerWithAnIntervalOfZeroOrLessTicksOnceAndStops(interval: Duration) async throws {
        try await withTestSystem { system in
            let ticks = Recorder<String>()
            let actor = system.spawn(Ticker(ticks: ticks))
            actor.tell(.startPeriodic(key: "p", tag: "tick", every: interval))
            await waitUntil("the one tick") { ticks.count >= 1 }
            // A later timer proves time has passed for any further tick to arrive.
            actor.tell(.startSingle(key: "probe", tag: "probe", after: .milliseconds(100)))
            await waitUntil("probe") { ticks.values.contains("probe") }
            #expect(ticks.values == ["tick", "probe"])
            let active = try await actor.ask { Ticker.Message.isActive("p", $0) }
            #expect(!active, "the timer ended after its one tick")
        }
    }

    @Test func startingATimerUnderAnActiveKeyReplacesIt() async throws {
        try await withTestSystem { system in
            let ticks = Recorder<String>()
            let gate = Gate()
            let actor = system.spawn(Ticker(ticks: ticks, gate: gate))
            // The three starts are queued behind a blocked handler, then handled back to back:
            // "old" is replaced long before its deadline however slowly this task sends.
            actor.tell(.block)
            await waitUntil("blocked") { gate.entered == 1 }
            actor.tell(.startSingle(key: "k", tag: "old", after: .milliseconds(200)))
            actor.tell(.startSingle(key: "k", tag: "new", after: .milliseconds(40)))
            actor.tell(.startSingle(key: "later", tag: "later", after: .milliseconds(300)))
            gate.open()
            await waitUntil("later fired") { ticks.values.contains("later") }
            #expect(ticks.values == ["new", "later"])
        }
    }

    @Test func aTickAlreadyInTheMailboxIsDiscardedByCancel() async throws {
        try await withTestSystem { system in
            let ticks = Recorder<String>()
            let gate = Gate()
            let actor = system.spawn(Ticker(ticks: ticks, gate: gate))
            // One handler starts the timer, blocks, then cancels: the tick can only be queued
            // behind it (two messages let a slow sender see the tick overtake the second one).
            actor.tell(.startBlockThenCancel(key: "k", tag: "late", after: .milliseconds(1)))
            await waitUntil("blocked") { gate.entered == 1 }
            await waitUntil("the tick is queued behind the blocked handler") { !actor.isMailboxEmpty }
            gate.open()
            let active = try await actor.ask { Ticker.Message.isActive("k", $0) }
            #expect(!active)
            #expect(ticks.values.isEmpty, "the handler cancelled the timer after its tick was queued")
        }
    }

    @Test func timersAreCancelledWhenTheActorStops() async throws {
        try await withTestSystem { system in
            let ticks = Recorder<String>()
            let actor = system.spawn(Ticker(ticks: ticks))
            actor.tell(.startPeriodic(key: "p", tag: "tick", every: .milliseconds(2)))
            actor.tell(.startSingle(key: "s", tag: "single", after: .milliseconds(30)))
            await waitUntil("ticking") { ticks.count >= 2 }
            actor.stop()
            _ = await actor.terminated()
            let atStop = ticks.count
            let other = system.spawn(Ticker(ticks: Recorder<String>()))
            let probe = Recorder<String>()
            let prober = system.spawn(Ticker(ticks: probe))
            prober.tell(.startSingle(key: "x", tag: "x", after: .milliseconds(60)))
            await waitUntil("probe") { probe.count == 1 }
            #expect(ticks.count == atStop, "no tick after stop")
            #expect(system.deadLetters.total == 0, "cancelled ticks are not dead letters")
            other.stop()
        }
    }

    @Test func aRestartCancelsTheFailedInstancesTimers() async throws {
        try await withTestSystem { system in
            let ticks = Recorder<String>()
            let actor = system.spawn(options: SpawnOptions(failureDecider: { _ in .restart })) { Ticker(ticks: ticks) }
            actor.tell(.startPeriodic(key: "p", tag: "tick", every: .milliseconds(2)))
            await waitUntil("ticking") { ticks.count >= 2 }
            actor.tell(.fail)
            let count = try await actor.ask { Ticker.Message.count($0) }
            #expect(count == 0, "the fresh instance has no timers")
        }
    }

    @Test func keysMatchByValueWhateverTheirStaticType() async throws {
        try await withTestSystem { system in
            let actor = system.spawn(KeyedTicker())
            let report = try await actor.ask { KeyedTicker.Message.run($0) }
            #expect(
                report == [
                    "Int 7 cancelled by Int8 7: true",
                    "UInt64 9 found and cancelled by Int 9: true",
                    "custom key active: true, cancelled: true",
                    "Int 7 and String \"7\" are different keys: true",
                ])
        }
    }

    @Test func manyTimersFireExactlyOnceEachAndNeverEarly() async throws {
        try await withTestSystem { system in
            let ticks = Recorder<String>()
            let start = ContinuousClock.now
            let actor = system.spawn(Ticker(ticks: ticks, onTick: nil))
            for index in (0..<100).reversed() {
                actor.tell(.startSingle(key: "t\(index)", tag: "\(index)", after: .milliseconds(index)))
            }
            await waitUntil("all fired") { ticks.count == 100 }
            let elapsed = ContinuousClock.now - start
            #expect(Set(ticks.values) == Set((0..<100).map { "\($0)" }), "each timer fired")
            #expect(ticks.count == 100, "and only once")
            #expect(elapsed >= .milliseconds(99), "the longest delay was honoured")
        }
    }

    /// An interval near Int64.max nanoseconds (about 292 years; `.seconds(Int64.max)`, say, for
    /// "practically never again") saturates the next deadline: the timer thread's
    /// `deadline + interval` once trapped at the first tick. Run in a child process.
    @Test func aPeriodicTimerWithAHugeIntervalTicksOnceAndWaits() async {
        await #expect(processExitsWith: .success) {
            let system = ActorSystem(configuration: .init(workerCount: 1, pinWorkers: false))
            system.spawn(HugeIntervalTicker()).tell(.start)
            while HugeIntervalTicker.ticks.load(ordering: .acquiring) == 0 { usleep(1000) }
            usleep(50_000)  // the timer thread schedules the next tick right after sending this one
            system.shutdownBlocking()
            exit(0)
        }
    }
}

/// Starts a periodic timer due at once, with an interval of `.seconds(Int64.max)`.
private struct HugeIntervalTicker: ActorDefinition {
    enum Message: Sendable { case start, tick }
    static let ticks = Atomic<Int>(0)

    func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .start: context.startPeriodicTimer(key: 0, message: .tick, every: .seconds(Int64.max), initialDelay: .zero)
        case .tick: Self.ticks.add(1, ordering: .releasing)
        }
    }
}

struct Ticker: ActorDefinition {
    enum Message: Sendable {
        case startSingle(key: String, tag: String, after: Duration)
        case startPeriodic(key: String, tag: String, every: Duration)
        case cancel(String, Reply<Void>)
        case startBlockThenCancel(key: String, tag: String, after: Duration)
        case isActive(String, Reply<Bool>)
        case count(Reply<Int>)
        case tick(String)
        case block
        case fail
    }

    let ticks: Recorder<String>
    var gate: Gate?
    var onTick: (@Sendable () -> Void)?

    init(ticks: Recorder<String>, gate: Gate? = nil, onTick: (@Sendable () -> Void)? = nil) {
        self.ticks = ticks
        self.gate = gate
        self.onTick = onTick
    }

    func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .startSingle(let key, let tag, let delay):
            context.startSingleTimer(key: key, message: .tick(tag), after: delay)
        case .startPeriodic(let key, let tag, let interval):
            context.startPeriodicTimer(key: key, message: .tick(tag), every: interval)
        case .cancel(let key, let reply):
            context.cancelTimer(key: key)
            reply.succeed()
        case .startBlockThenCancel(let key, let tag, let delay):
            context.startSingleTimer(key: key, message: .tick(tag), after: delay)
            gate?.enter()
            context.cancelTimer(key: key)
        case .isActive(let key, let reply):
            reply.succeed(context.isTimerActive(key: key))
        case .count(let reply):
            reply.succeed(context.activeTimerCount)
        case .tick(let tag):
            onTick?()
            ticks.append(tag)
        case .block:
            gate?.enter()
        case .fail:
            throw TestError("timer owner failed")
        }
    }
}

/// Starts and cancels timers under keys of several static types, and reports what it saw.
struct KeyedTicker: ActorDefinition {
    enum Message: Sendable { case run(Reply<[String]>), tick }
    enum Key: Hashable, Sendable { case poll(String) }

    func receive(_ message: Message, context: ActorContext<Message>) {
        guard case .run(let reply) = message else { return }
        var report: [String] = []
        context.startSingleTimer(key: 7, message: .tick, after: .seconds(60))
        context.cancelTimer(key: Int8(7))
        report.append("Int 7 cancelled by Int8 7: \(!context.isTimerActive(key: 7))")
        context.startSingleTimer(key: UInt64(9), message: .tick, after: .seconds(60))
        let wideActive = context.isTimerActive(key: 9)
        context.cancelTimer(key: 9)
        report.append("UInt64 9 found and cancelled by Int 9: \(wideActive && !context.isTimerActive(key: UInt64(9)))")
        context.startPeriodicTimer(key: Key.poll("a"), message: .tick, every: .seconds(60))
        let active = context.isTimerActive(key: Key.poll("a"))
        context.cancelTimer(key: Key.poll("a"))
        report.append("custom key active: \(active), cancelled: \(!context.isTimerActive(key: Key.poll("a")))")
        context.startSingleTimer(key: 7, message: .tick, after: .seconds(60))
        context.startSingleTimer(key: "7", message: .tick, after: .seconds(60))
        report.append("Int 7 and String \"7\" are different keys: \(context.activeTimerCount == 2)")
        reply.succeed(report)
    }
}
