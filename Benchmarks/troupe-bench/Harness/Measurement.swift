// One measured row, and the helpers that measure it (wall time, allocations, peak memory).

import CBenchSupport
import Glibc
import Histogram

/// Latency percentiles of one row, in nanoseconds.
struct LatencySummary: Sendable {
    var count: UInt64
    var p50: UInt64
    var p99: UInt64
    var p999: UInt64
    var max: UInt64
    var mean: Double

    init(_ histogram: Histogram<UInt64>) {
        count = histogram.totalCount
        p50 = histogram.valueAtPercentile(50)
        p99 = histogram.valueAtPercentile(99)
        p999 = histogram.valueAtPercentile(99.9)
        max = histogram.max
        mean = histogram.mean
    }
}

/// A histogram for round-trip times in nanoseconds: 1 ns to 100 s, 3 significant digits.
func makeLatencyHistogram() -> Histogram<UInt64> {
    Histogram<UInt64>(
        lowestDiscernibleValue: 1, highestTrackableValue: 100_000_000_000, numberOfSignificantValueDigits: .three)
}

/// One benchmark result.
struct Measurement: Sendable {
    var workload: Workload
    /// System name, e.g. "Swift native", "Dispatch", "Troupe", "Troupe (ask from a task)".
    var system: String
    /// Units handled (see `Workload.unit`); IdleCPU/Memory: actors; timer rows: timers.
    var messages: Int
    /// Wall-clock seconds of the measured window.
    var seconds: Double
    /// Allocations (malloc-family calls, all threads) during the measured window.
    var allocations: UInt64
    /// Free-form remark: the form measured.
    var note: String
    /// Resident-set high-water mark during the row (set-up included), bytes.
    var peakRSS: Int64?
    /// Resident set when the row started (after malloc_trim), bytes: `peakRSS - rssAtStart` is
    /// what the row added.
    var rssAtStart: Int64?
    /// IdleCPU, TimersIdleCPU: process CPU seconds used during the window.
    var cpuSeconds: Double?
    /// MemoryPerIdleActor, TimersMemory: heap growth while creating the actors / arming the timers.
    var heapBytes: Int?
    /// TimersMemory: resident-set growth over the same window, bytes (page granularity).
    var rssBytes: Int64?
    /// Latency rows: per-operation percentiles; TimersLateness: lateness percentiles.
    var latency: LatencySummary?
    /// False for rows measured by another program (the peers): their allocations are unknown.
    var allocationsCounted = true
    /// A row whose unit differs from its workload's (Restart's spawn+stop and native rows:
    /// actors), singular and plural.
    var unitOverride: (singular: String, plural: String)?

    init(
        workload: Workload, system: String, messages: Int, seconds: Double, allocations: UInt64,
        note: String = "", cpuSeconds: Double? = nil, heapBytes: Int? = nil, latency: LatencySummary? = nil
    ) {
        self.workload = workload
        self.system = system
        self.messages = messages
        self.seconds = seconds
        self.allocations = allocations
        self.note = note
        self.cpuSeconds = cpuSeconds
        self.heapBytes = heapBytes
        self.latency = latency
    }

    var unit: String { unitOverride?.singular ?? workload.unit }
    var unitPlural: String { unitOverride?.plural ?? workload.unitPlural }

    var hasRate: Bool { workload.kind == .throughput || workload.kind == .latency }
    var isTroupe: Bool { system.hasPrefix(BenchSystem.troupePrefix) }
    var messagesPerSecond: Double { Double(messages) / seconds }
    var nanosecondsPerMessage: Double { seconds * 1e9 / Double(messages) }
    var allocationsPerMessage: Double { Double(allocations) / Double(messages) }
    var cpuPercentOfOneCore: Double? { cpuSeconds.map { $0 / seconds * 100 } }
    /// Heap bytes per unit (actor, timer).
    var bytesPerUnit: Double? { heapBytes.map { Double($0) / Double(messages) } }
    /// Resident-set bytes per unit (TimersMemory).
    var rssBytesPerUnit: Double? { rssBytes.map { Double($0) / Double(messages) } }
}

/// The wall time and the allocations (malloc-family calls, all threads) of a measured window.
struct Window: Sendable {
    var seconds: Double
    var allocations: UInt64
}

/// Measures wall time and allocation count of a window, in synchronous or async code:
///
///     let stopwatch = Stopwatch()
///     ... work ...
///     let window = stopwatch.stop()
struct Stopwatch {
    private let allocationsAtStart: UInt64
    private let start: ContinuousClock.Instant

    init() {
        allocationsAtStart = CBenchSupport_allocation_count()
        start = ContinuousClock.now
    }

    func stop() -> Window {
        let end = ContinuousClock.now
        let allocations = CBenchSupport_allocation_count() &- allocationsAtStart
        return Window(seconds: (end - start).seconds, allocations: allocations)
    }
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }
}

/// The peak-memory window of one row: free heap goes back to the kernel (malloc_trim), the
/// kernel's high-water mark is reset to the current RSS, and the row's peak is read at the end.
struct PeakWindow {
    private let available: Bool
    private let rssAtStart: Int64

    init() {
        available = CBenchSupport_reset_peak_rss() == 0
        rssAtStart = CBenchSupport_rss_bytes()
    }

    func close(_ m: inout Measurement) {
        guard available else { return }
        m.peakRSS = CBenchSupport_peak_rss_bytes()
        m.rssAtStart = rssAtStart >= 0 ? rssAtStart : nil
    }
}

/// Runs one throughput or latency row if selected: an unreported warm-up at a small size
/// (unless quick), then `config.runs` measured runs, keeping the fastest. Peak memory is the
/// resident-set high-water mark over the measured runs (set-up included), after returning free
/// heap to the kernel. `run` gets the size and verifies its own result (see `verify`).
/// `divisor` shrinks the size for a slow secondary form (never below the quick size).
func benchmark(
    _ config: BenchConfig, _ workload: Workload, system: String, family: SizeFamily, divisor: Int = 1,
    _ run: (Int) -> Measurement
) -> Measurement? {
    guard config.includes(workload, system: system) else { return nil }
    let full = config.size(workload, family)
    let size = divisor == 1 || config.quick ? full : max(full / divisor, min(full, config.sizes[workload]!.quick))
    progress("\(workload.rawValue) / \(system) (\(grouped(size)) \(config.sizes[workload]!.meaning))")
    /// One run, then (Troupe rows) wait until its actors stopped.
    func runAndSettle(_ size: Int) -> Measurement {
        let m = run(size)
        if system.hasPrefix(BenchSystem.troupePrefix) { troupe.settle("\(workload.rawValue) / \(system)") }
        return m
    }
    if config.warmUp {
        _ = runAndSettle(config.warmUpSize(workload, size))
    }
    let peakWindow = PeakWindow()
    var best = runAndSettle(size)
    for _ in 1..<max(config.runs, 1) {
        let next = runAndSettle(size)
        // The allocation guard keeps the run with the fewest allocations (the steady state);
        // a timing run keeps the fastest.
        if config.allocationGuard ? next.allocations < best.allocations : next.seconds < best.seconds { best = next }
    }
    peakWindow.close(&best)
    return best
}

/// IdleCPU: `makeActors` creates (and warms up) `config.idleActors` actors; they are kept
/// alive while the thread sleeps `config.idleSeconds`; the process CPU time of that window is
/// reported.
func measureIdleCPU<Actors>(
    _ config: BenchConfig, system: String, note: String = "",
    makeActors: (Int) -> Actors
) -> Measurement? {
    guard config.includes(.idleCPU, system: system) else { return nil }
    progress("\(Workload.idleCPU.rawValue) / \(system)")
    let peakWindow = PeakWindow()
    let actors = makeActors(config.idleActors)
    sleepSeconds(0.05)  // let set-up work (thread wake-ups, warm-up messages) settle
    let cpuAtStart = CBenchSupport_process_cpu_seconds()
    let stopwatch = Stopwatch()
    sleepSeconds(config.idleSeconds)
    let window = stopwatch.stop()
    let cpuSeconds = CBenchSupport_process_cpu_seconds() - cpuAtStart
    withExtendedLifetime(actors) {}
    verify(cpuSeconds >= 0, "\(Workload.idleCPU.rawValue) / \(system): getrusage failed")
    var m = Measurement(
        workload: .idleCPU, system: system, messages: config.idleActors,
        seconds: window.seconds, allocations: window.allocations, note: note, cpuSeconds: cpuSeconds)
    peakWindow.close(&m)
    return m
}

/// MemoryPerIdleActor: creates `config.memoryActors` actors with `makeActor` (called with the
/// index) and keeps them alive in a pre-sized array, so only the actors show in the heap growth.
func measureMemoryPerActor<Actor>(
    _ config: BenchConfig, system: String, note: String = "",
    makeActor: (Int) -> Actor
) -> Measurement? {
    guard config.includes(.memoryPerIdleActor, system: system) else { return nil }
    progress("\(Workload.memoryPerIdleActor.rawValue) / \(system)")
    let peakWindow = PeakWindow()
    let count = config.memoryActors
    var actors: [Actor] = []
    actors.reserveCapacity(count)
    let heapAtStart = CBenchSupport_heap_in_use()
    let stopwatch = Stopwatch()
    for index in 0..<count {
        actors.append(makeActor(index))
    }
    let window = stopwatch.stop()
    let heapAtEnd = CBenchSupport_heap_in_use()
    verify(
        actors.count == count,
        "\(Workload.memoryPerIdleActor.rawValue) / \(system): created \(actors.count) actors, expected \(count)")
    var m = Measurement(
        workload: .memoryPerIdleActor, system: system, messages: count,
        seconds: window.seconds, allocations: window.allocations,
        note: "\(fixed(Double(window.allocations) / Double(count), 2)) allocs/actor"
            + (note.isEmpty ? "" : "; \(note)"),
        heapBytes: heapAtEnd - heapAtStart)  // size_t imports as Int
    peakWindow.close(&m)
    withExtendedLifetime(actors) {}
    return m
}

/// Checks a workload's result. A wrong result is fatal in every mode: the message goes to
/// stderr and the process exits with status 1.
func verify(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        printError("troupe-bench: WRONG RESULT: \(message())")
        exit(1)
    }
}

/// `verify(actual == expected)` with a uniform message.
func verifyEqual<T: Equatable>(
    _ actual: T, _ expected: T, _ workload: Workload, _ system: String,
    _ what: String = "result"
) {
    verify(actual == expected, "\(workload.rawValue) / \(system): \(what) is \(actual), expected \(expected)")
}

/// Sleeps the calling thread (not a task) for `seconds`.
func sleepSeconds(_ seconds: Double) {
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR {
        request = remaining
    }
}

/// Writes a line to stderr (file descriptor 2; the C `stderr` global is not concurrency-safe).
func printError(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}

/// Progress line on stderr, so stdout stays clean for `--json`.
func progress(_ text: String) {
    printError("  running \(text)")
}
