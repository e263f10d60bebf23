// Timers: the single timing structure per system (one heap of deadlines, one timer thread;
// `DeadlineTimer`) as actors use it through `ActorContext.startSingleTimer(key:message:after:)`
// and `cancelTimer(key:)`.
//
// - TimersArmCancel (one unit: a start + cancel pair): 100,000 other timers are armed 1–2 h
//   ahead by 1,000 holder actors (100 each), so the heap is deep; then one actor's handler
//   loops N times over `startSingleTimer(key: 0, …, after: 1–2 h, random)` +
//   `cancelTimer(key: 0)`, timed inside the handler. Verified: every 1,024th pair the timer is
//   active after the start and inactive after the cancel; no timer fired; the actor ends with
//   no active timer; the holders still hold all 100,000.
// - TimersLateness (one unit: a timer): 10 actors arm N single timers (N/10 each) with delays
//   uniform over 0.5–1 s (quick: 50–100 ms); each handler records lateness = CLOCK_MONOTONIC
//   when it handles the tick − (CLOCK_MONOTONIC read just before `startSingleTimer` + delay)
//   into an HdrHistogram. The runtime reads the same clock a little later when it arms, so the
//   figure slightly overstates. Verified: every timer fired exactly once (a tally per timer,
//   read after a grace period of 0.1 s past the last first firing), none before its deadline,
//   no timer left active.
//   Swift native (Task.sleep per timer): one unstructured `Task` per timer: it reads the clock,
//   `try await Task.sleep(for: delay)` (default tolerance), reads the clock again.
// - TimersMemory (one unit: an active timer): heap growth (mallinfo2, all arenas) and resident-set
//   growth while 100,000 timers are armed 1–2 h ahead. "Troupe": 1,000 holder actors, 100
//   timers each; "Troupe (1 timer per actor)": 100,000 holders with one timer each (includes the
//   per-actor bookkeeping the first timer allocates). The holders are spawned and have handled
//   one message before the window. Timer messages are one word (an enum with class payloads).
//   Swift native (Task.sleep per timer): 100,000 unstructured tasks asleep for 1–2 h.
// - TimersIdleCPU: process CPU (getrusage, all threads) over an idle window while the same
//   100,000 timers are armed (measured right after TimersMemory, same set-up). Target ≤ 1 %.
//
// Targets: lateness p99 ≤ 1 ms on an idle machine; ≤ 200 B per active timer; idle CPU ≤ 1 % of
// one core.

import CBenchSupport
import Dispatch
import Histogram
import Synchronization
import Troupe

let timerNativeSystem = "Swift native (Task.sleep per timer)"
let timerOnePerActorSystem = "Troupe (1 timer per actor)"
let timerSystems = [timerNativeSystem, timerOnePerActorSystem]

/// Actors of the TimersLateness Troupe row.
private let latenessActors = 10

/// A far deadline: 1 h plus up to 1 h, so that no timer fires during a run and the heap
/// positions of new entries are spread like those of the others.
@inline(__always)
private func farDelay(_ random: inout FastRandom) -> Duration {
    .seconds(3_600) + .nanoseconds(Int64(truncatingIfNeeded: random.next() % 3_600_000_000_000))
}

/// Counts ticks that should never come (far timers, cancelled timers).
private final class TickCount: Sendable {
    let value = Atomic<Int>(0)
    func add() { value.add(1, ordering: .relaxed) }
    var total: Int { value.load(ordering: .acquiring) }
}

private final class ArmRequest: Sendable {
    let count: Int
    let seed: UInt64
    let done: Latch
    init(count: Int, seed: UInt64, done: Latch) {
        self.count = count
        self.seed = seed
        self.done = done
    }
}

/// Holds `count` far single timers (keys 0 ..< count).
private struct TimerHolder: ActorDefinition {
    enum Message: Sendable {
        case touch(Latch)
        case arm(ArmRequest)
        case tick
        case activeTimers(Reply<Int>)
    }
    let ticks: TickCount

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .touch(let latch):
            latch.countDown()
        case .arm(let request):
            var random = FastRandom(seed: request.seed)
            for key in 0..<request.count {
                context.startSingleTimer(key: key, message: .tick, after: farDelay(&random))
            }
            request.done.countDown()
        case .tick:
            ticks.add()
        case .activeTimers(let reply):
            reply.succeed(context.activeTimerCount)
        }
    }
}

/// Spawns `actors` holders and waits until each handled a first message (started, warm).
private func spawnHolders(_ actors: Int, ticks: TickCount, _ what: String) -> [ActorRef<TimerHolder.Message>] {
    let holders = (0..<actors).map { _ in troupe.system.spawn(TimerHolder(ticks: ticks)) }
    let touched = Latch(count: actors)
    for holder in holders { holder.tell(.touch(touched)) }
    touched.wait("\(what): holders' first message")
    return holders
}

/// Asks every holder for its active timer count; returns the sum.
private func activeTimers(_ holders: [ActorRef<TimerHolder.Message>], _ what: String) -> Int {
    var total = 0
    for holder in holders {
        do {
            total += try holder.askBlocking { .activeTimers($0) }
        } catch {
            verify(false, "\(what): active-timer ask failed: \(error)")
        }
    }
    return total
}

// MARK: - TimersArmCancel

private struct ArmCancelResult: Sendable {
    var window: Window
    var checked: Int
    var wrongState: Int
    var activeAfter: Int
}

private struct Armer: ActorDefinition {
    enum Message: Sendable {
        case run(count: Int, done: Completion<ArmCancelResult>)
        case tick
    }
    let ticks: TickCount

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .run(let count, let done):
            var random = FastRandom(seed: 0x7133_7133)
            var checked = 0
            var wrongState = 0
            let stopwatch = Stopwatch()
            for index in 0..<count {
                context.startSingleTimer(key: 0, message: .tick, after: farDelay(&random))
                if index & 1023 == 0 {
                    checked += 1
                    if !context.isTimerActive(key: 0) { wrongState += 1 }
                    context.cancelTimer(key: 0)
                    if context.isTimerActive(key: 0) { wrongState += 1 }
                } else {
                    context.cancelTimer(key: 0)
                }
            }
            let window = stopwatch.stop()
            done.complete(
                ArmCancelResult(
                    window: window, checked: checked,
                    wrongState: wrongState, activeAfter: context.activeTimerCount))
        case .tick:
            ticks.add()
        }
    }
}

func timersArmCancelRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.timersArmCancel
    var rows = RowSet(config, workload)
    let system = BenchSystem.troupe
    rows.measure(system, family: .troupe) { n, row in
        let what = "\(workload.rawValue) / \(system)"
        let ticks = TickCount()
        let perActor = config.timersPerActor
        let holders = spawnHolders(config.activeTimers / perActor, ticks: ticks, what)
        let armed = Latch(count: holders.count)
        for (index, holder) in holders.enumerated() {
            holder.tell(.arm(ArmRequest(count: perActor, seed: UInt64(index + 1), done: armed)))
        }
        armed.wait("\(what): arming the background timers")
        let armer = troupe.system.spawn(Armer(ticks: ticks))
        let done = Completion<ArmCancelResult>()
        armer.tell(.run(count: n, done: done))
        let result = done.wait(what)
        let background = activeTimers(holders, what)
        armer.stop()
        for holder in holders { holder.stop() }
        row.expect(
            result.wrongState, 0,
            "timer states contradicting start/cancel (of \(result.checked) checked pairs)")
        row.expect(result.activeAfter, 0, "timers left active by the arming actor")
        row.expect(background, holders.count * perActor, "background timers still active")
        row.expect(ticks.total, 0, "timers fired (all were far or cancelled)")
        return row.measurement(
            result.window, units: n,
            note:
                "in one handler; \(grouped(background)) other timers active (heap depth ~\(heapDepth(background)))")
    }
    return rows.measured
}

/// Levels of a binary heap of `count` entries.
private func heapDepth(_ count: Int) -> Int {
    var depth = 0
    var remaining = count
    while remaining > 0 {
        depth += 1
        remaining >>= 1
    }
    return depth
}

// MARK: - TimersLateness

/// Deterministic delays in nanoseconds, uniform over the configured window.
private func latenessDelays(_ config: BenchConfig, _ count: Int) -> [Int64] {
    var random = FastRandom(seed: 0x1A7E)
    let from = Int64(config.latenessWindow.from * 1e9)
    let span = UInt64(max(1, (config.latenessWindow.to - config.latenessWindow.from) * 1e9))
    return (0..<count).map { _ in from + Int64(truncatingIfNeeded: random.next() % span) }
}

private final class LatenessPlan: Sendable {
    let delays: [Int64]
    let fired: Latch
    init(delays: [Int64], fired: Latch) {
        self.delays = delays
        self.fired = fired
    }
}

private struct LatenessReport: Sendable {
    var histogram: Histogram<UInt64>
    /// Timers whose tick was handled exactly once / more than once / never.
    var once = 0
    var twice = 0
    var never = 0
    var early = 0
    var activeAfter = 0
}

private struct Punctual: ActorDefinition {
    enum Message: Sendable {
        case arm(LatenessPlan)
        case due(index: Int, deadline: UInt64)
        case report(Reply<LatenessReport>)
    }
    var histogram = makeLatencyHistogram()
    var tally: [UInt8] = []
    var early = 0
    var fired: Latch?

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .arm(let plan):
            fired = plan.fired
            tally = Array(repeating: 0, count: plan.delays.count)
            for (index, delay) in plan.delays.enumerated() {
                let deadline = CBenchSupport_now_ns() &+ UInt64(delay)
                context.startSingleTimer(
                    key: index, message: .due(index: index, deadline: deadline), after: .nanoseconds(delay))
            }
        case .due(let index, let deadline):
            let now = CBenchSupport_now_ns()
            if now < deadline {
                early += 1
                histogram.record(0)
            } else {
                histogram.record(now - deadline)
            }
            tally[index] &+= 1
            if tally[index] == 1 { fired?.countDown() }
        case .report(let reply):
            var report = LatenessReport(histogram: histogram, early: early, activeAfter: context.activeTimerCount)
            for count in tally {
                switch count {
                case 0: report.never += 1
                case 1: report.once += 1
                default: report.twice += 1
                }
            }
            reply.succeed(report)
        }
    }
}

/// Native row's shared state: one histogram behind a lock, a latch per firing.
private final class NativeLateness: Sendable {
    let histogram = Mutex(makeLatencyHistogram())
    let early = Atomic<Int>(0)
    let fired: Latch
    init(count: Int) { fired = Latch(count: count) }
}

func timersLatenessRows(_ config: BenchConfig) -> [Measurement] {
    let workload = Workload.timersLateness
    var rows = RowSet(config, workload)
    let spread = "deadlines \(fixed(config.latenessWindow.from, 2))–\(fixed(config.latenessWindow.to, 2)) s ahead"

    rows.measure(timerNativeSystem, family: .native) { n, row in
        let what = "\(workload.rawValue) / \(timerNativeSystem)"
        let delays = latenessDelays(config, n)
        let shared = NativeLateness(count: n)
        var tasks: [Task<Void, Never>] = []
        tasks.reserveCapacity(n)
        let stopwatch = Stopwatch()
        for delay in delays {
            tasks.append(
                Task {
                    let deadline = CBenchSupport_now_ns() &+ UInt64(delay)
                    try? await Task.sleep(for: .nanoseconds(delay))
                    let now = CBenchSupport_now_ns()
                    if now < deadline { shared.early.add(1, ordering: .relaxed) }
                    shared.histogram.withLock { _ = $0.record(now < deadline ? 0 : now - deadline) }
                    shared.fired.countDown()
                })
        }
        shared.fired.wait(what)
        let window = stopwatch.stop()
        let started = tasks
        runBlocking(what) { for task in started { await task.value } }
        let histogram = shared.histogram.withLock { $0 }
        row.expect(histogram.totalCount, UInt64(n), "firings recorded")
        row.expect(
            shared.early.load(ordering: .acquiring), 0,
            "tasks woken before their deadline")
        return row.measurement(
            window, units: n,
            note: "one Task per timer: try await Task.sleep(for:), default tolerance; \(spread)",
            latency: LatencySummary(histogram))
    }

    let system = BenchSystem.troupe
    rows.measure(system, family: .troupe) { n, row in
        let what = "\(workload.rawValue) / \(system)"
        let delays = latenessDelays(config, n)
        let actorCount = min(latenessActors, n)
        let fired = Latch(count: n)
        let plans = (0..<actorCount).map { actor in
            LatenessPlan(
                delays: Array(delays[(actor * n / actorCount)..<((actor + 1) * n / actorCount)]), fired: fired)
        }
        let actors = (0..<actorCount).map { _ in troupe.system.spawn(Punctual()) }
        let stopwatch = Stopwatch()
        for (actor, plan) in zip(actors, plans) { actor.tell(.arm(plan)) }
        fired.wait(what)
        let window = stopwatch.stop()
        sleepSeconds(config.latenessGraceSeconds)  // a second firing of any timer would arrive by now
        var total = LatenessReport(histogram: makeLatencyHistogram())
        for actor in actors {
            do {
                let report = try actor.askBlocking { .report($0) }
                total.histogram.add(report.histogram)
                total.once += report.once
                total.twice += report.twice
                total.never += report.never
                total.early += report.early
                total.activeAfter += report.activeAfter
            } catch {
                verify(false, "\(what): report ask failed: \(error)")
            }
            actor.stop()
        }
        row.expect(total.twice, 0, "timers that fired more than once")
        row.expect(total.never, 0, "timers that never fired")
        row.expect(total.once, n, "timers that fired exactly once")
        row.expect(total.early, 0, "timers handled before their deadline")
        row.expect(total.activeAfter, 0, "timers still active after firing")
        row.expect(total.histogram.totalCount, UInt64(n), "lateness values recorded")
        return row.measurement(
            window, units: n,
            note: "\(actorCount) actors, startSingleTimer; \(spread); \(troupe.workersNote)",
            latency: LatencySummary(total.histogram))
    }

    return rows.measured
}

// MARK: - TimersMemory and TimersIdleCPU

/// What both rows of one set-up measured.
private struct ArmedWindow {
    var timers: Int
    var seconds: Double
    var allocations: UInt64
    var heapBytes: Int
    var rssBytes: Int64
}

/// Waits (at most 5 s) until the process heap stops changing: 100 ms without a change of 64 KB or
/// more. Memory that the previous row frees on other threads after it ended (the native row's
/// cancelled sleeps do, for a while) would otherwise count as negative growth in the next window.
/// Returns the seconds waited.
private func waitForQuietHeap() -> Double {
    var waited = 0.0
    var previous = CBenchSupport_heap_in_use()
    var quietTicks = 0
    while quietTicks < 10 && waited < 5 {
        sleepSeconds(0.01)
        waited += 0.01
        let current = CBenchSupport_heap_in_use()
        quietTicks = abs(current - previous) < 64 * 1024 ? quietTicks + 1 : 0
        previous = current
    }
    return waited
}

/// Measures memory (arming window) and, if asked, idle CPU over `config.idleSeconds` while the
/// timers stay armed; `arm` arms them and returns when all are armed, `finish` verifies and
/// tears down. Returns the memory row (if selected) and the idle row (if selected).
private func armedTimerRows(
    _ config: BenchConfig, memorySystem: String, idleSystem: String?, note: String,
    prepare: () -> Void, arm: () -> Void, finish: () -> Void
) -> [Measurement] {
    let wantsMemory = config.includes(.timersMemory, system: memorySystem)
    let wantsIdle = idleSystem.map { config.includes(.timersIdleCPU, system: $0) } ?? false
    guard wantsMemory || wantsIdle else { return [] }
    let timers = config.activeTimers
    if wantsMemory { progress("\(Workload.timersMemory.rawValue) / \(memorySystem) (\(grouped(timers)) timers)") }
    if wantsIdle { progress("\(Workload.timersIdleCPU.rawValue) / \(idleSystem!) (\(grouped(timers)) timers)") }
    let peakWindow = PeakWindow()
    prepare()
    _ = waitForQuietHeap()
    let heapAtStart = CBenchSupport_heap_in_use()
    let rssAtStart = CBenchSupport_rss_bytes()
    let stopwatch = Stopwatch()
    arm()
    let window = stopwatch.stop()
    let heapAtEnd = CBenchSupport_heap_in_use()
    let rssAtEnd = CBenchSupport_rss_bytes()
    var rows: [Measurement] = []
    if wantsMemory {
        var m = Measurement(
            workload: .timersMemory, system: memorySystem, messages: timers, seconds: window.seconds,
            allocations: window.allocations,
            note: "\(fixed(Double(window.allocations) / Double(timers), 2)) allocs/timer; \(note)",
            heapBytes: heapAtEnd - heapAtStart)  // size_t imports as Int
        m.rssBytes = rssAtStart >= 0 && rssAtEnd >= 0 ? rssAtEnd - rssAtStart : nil
        peakWindow.close(&m)
        rows.append(m)
    }
    if wantsIdle, let idleSystem {
        sleepSeconds(0.05)  // let the arming's wake-ups settle
        let cpuAtStart = CBenchSupport_process_cpu_seconds()
        let idleWatch = Stopwatch()
        sleepSeconds(config.idleSeconds)
        let idleWindow = idleWatch.stop()
        let cpuSeconds = CBenchSupport_process_cpu_seconds() - cpuAtStart
        verify(cpuSeconds >= 0, "\(Workload.timersIdleCPU.rawValue) / \(idleSystem): getrusage failed")
        var m = Measurement(
            workload: .timersIdleCPU, system: idleSystem, messages: timers, seconds: idleWindow.seconds,
            allocations: idleWindow.allocations, note: note, cpuSeconds: cpuSeconds)
        peakWindow.close(&m)
        rows.append(m)
    }
    finish()
    return rows
}

/// Troupe: `timers` far timers over `timers / perActor` holder actors.
private func troupeArmedRows(
    _ config: BenchConfig, perActor: Int, memorySystem: String, idleSystem: String?
) -> [Measurement] {
    let what = "\(Workload.timersMemory.rawValue) / \(memorySystem)"
    let timers = config.activeTimers
    let ticks = TickCount()
    var holders: [ActorRef<TimerHolder.Message>] = []
    // Arming requests in chunks of 1,000 holders, each chunk awaited before the next: the mailbox
    // envelopes in flight stay within what the set-up's first messages already pooled, so the
    // window counts the timers, not envelopes allocated while the tells outrun the workers.
    var chunks: [(requests: [ArmRequest], armed: Latch)] = []
    let layout =
        perActor == 1
        ? "\(grouped(timers)) actors × 1 timer" : "\(grouped(timers / perActor)) actors × \(perActor) timers"
    let rows = armedTimerRows(
        config, memorySystem: memorySystem, idleSystem: idleSystem,
        note: "\(layout), 1–2 h ahead; \(troupe.workersNote)",
        prepare: {
            holders = spawnHolders(timers / perActor, ticks: ticks, what)
            for start in stride(from: 0, to: holders.count, by: 1_000) {
                let end = min(start + 1_000, holders.count)
                let armed = Latch(count: end - start)
                chunks.append(
                    ((start..<end).map { ArmRequest(count: perActor, seed: UInt64($0 + 1), done: armed) }, armed))
            }
        },
        arm: {
            var next = 0
            for index in chunks.indices {
                for request in chunks[index].requests {
                    holders[next].tell(.arm(request))
                    next += 1
                }
                chunks[index].requests = []  // the envelopes own the requests now (freed once handled)
                chunks[index].armed.wait("\(what): arming")
            }
        },
        finish: {
            let active = activeTimers(holders, what)
            for holder in holders { holder.stop() }
            verifyEqual(active, timers, .timersMemory, memorySystem, "active timers")
            verifyEqual(ticks.total, 0, .timersMemory, memorySystem, "timers fired (all were armed 1–2 h ahead)")
            troupe.settle(what)
        })
    return rows
}

private final class NativeSleepers: Sendable {
    let started = Atomic<Int>(0)
    let fired = Atomic<Int>(0)
    let cancelled = Atomic<Int>(0)
}

/// Swift native: one task per timer, asleep 1–2 h.
private func nativeArmedRows(_ config: BenchConfig) -> [Measurement] {
    let what = "\(Workload.timersMemory.rawValue) / \(timerNativeSystem)"
    let timers = config.activeTimers
    let state = NativeSleepers()
    var tasks: [Task<Void, Never>] = []
    var delays: [Duration] = []
    return armedTimerRows(
        config, memorySystem: timerNativeSystem, idleSystem: timerNativeSystem,
        note: "\(grouped(timers)) tasks in Task.sleep(for: 1–2 h)",
        prepare: {
            var random = FastRandom(seed: 0xD00D)
            delays = (0..<timers).map { _ in farDelay(&random) }
            tasks.reserveCapacity(timers)
        },
        arm: {
            for delay in delays {
                tasks.append(
                    Task {
                        state.started.add(1, ordering: .relaxed)
                        do {
                            try await Task.sleep(for: delay)
                            state.fired.add(1, ordering: .relaxed)
                        } catch {
                            state.cancelled.add(1, ordering: .relaxed)
                        }
                    })
            }
            // Every task has started; give the last ones time to reach their sleep.
            var waited = 0.0
            while state.started.load(ordering: .acquiring) < timers {
                sleepSeconds(0.001)
                waited += 0.001
                verify(waited < workloadDeadlineSeconds, "\(what): tasks did not start")
            }
            sleepSeconds(0.02)
        },
        finish: {
            let sleeping = tasks
            for task in sleeping { task.cancel() }
            runBlocking(what) { for task in sleeping { await task.value } }
            verifyEqual(
                state.fired.load(ordering: .acquiring), 0, .timersMemory, timerNativeSystem,
                "sleeps that ended (all 1–2 h)")
            verifyEqual(
                state.cancelled.load(ordering: .acquiring), timers, .timersMemory, timerNativeSystem,
                "sleeps cancelled at the end")
        })
}

func timersArmedRows(_ config: BenchConfig) -> [Measurement] {
    var rows: [Measurement] = []
    rows += nativeArmedRows(config)
    rows += troupeArmedRows(
        config, perActor: config.timersPerActor, memorySystem: BenchSystem.troupe, idleSystem: BenchSystem.troupe)
    rows += troupeArmedRows(config, perActor: 1, memorySystem: timerOnePerActorSystem, idleSystem: nil)
    return rows
}
