// Benchmark harness for troupe-bench: configuration, measurement helpers,
// result verification, and the report (table or JSON).
//
// Only Glibc, Dispatch and CBenchSupport are used so the numbers are not
// disturbed by Foundation start-up work.

import CBenchSupport
import Dispatch
import Glibc

// MARK: - Workloads and systems

/// The benchmarked workloads, in report order.
enum Workload: String, CaseIterable, Sendable {
    /// One-way 1 → 1: a producer sends N increments to one consumer.
    case counting = "Counting"
    /// N → 1: several producers send to one consumer.
    case fanIn = "FanIn"
    /// Request/response: one actor awaits another actor's reply N times.
    case pingPong = "PingPong"
    /// Process CPU used while many actors exist and nothing happens.
    case idleCPU = "IdleCPU"
    /// Heap bytes per live, idle actor.
    case memoryPerIdleActor = "MemoryPerIdleActor"
}

/// System names used in the report. Ratios ("× native") divide a Troupe row's
/// throughput by the row of the same workload whose system is exactly
/// `BenchSystem.swiftNative`; targets are evaluated for every row whose system name
/// starts with `BenchSystem.troupePrefix`.
enum BenchSystem {
    static let swiftNative = "Swift native"
    static let swiftNativeAsyncStream = "Swift native (AsyncStream)"
    static let dispatch = "Dispatch"
    static let troupePrefix = "Troupe"
}

// MARK: - Configuration

/// Parameters of one run, parsed from the command line.
struct BenchConfig: Sendable {
    /// `--quick`: sizes 100× smaller, short idle window; results are verified, figures are not meaningful.
    var quick = false
    /// `--json`: print a JSON array of measurements on stdout instead of the table.
    var json = false
    /// `--filter NAME` (repeatable): run only (workload, system) pairs whose workload
    /// or system name contains one of these, case-insensitively. Empty = run everything.
    var filters: [String] = []
    /// `--runs N`: repeat each throughput workload N times and keep the fastest run.
    var runs = 1
    /// Throughput workloads first run once at 1/100 size (not reported) unless quick.
    var warmUp = true

    /// Counting: messages sent by the single producer.
    var countingMessages = 10_000_000
    /// FanIn: number of producers.
    var fanInProducers = 8
    /// FanIn: messages sent by each producer.
    var fanInMessagesPerProducer = 1_000_000
    /// PingPong: request/response round trips.
    var pingPongRoundTrips = 1_000_000
    /// Baseline (Swift native / Dispatch) sizes. AsyncStream and queue.async run at
    /// 0.2–1 M msg/s on the 2-core reference machine, so the slow baselines send fewer
    /// messages than the Troupe rows to keep a full run near one minute; their rates
    /// are per message and comparable. `--baseline-full` uses the Troupe sizes.
    var baselineCountingMessages = 1_000_000
    var baselineFanInMessagesPerProducer = 100_000
    var baselinePingPongRoundTrips = 1_000_000
    /// IdleCPU: actors alive during the idle window.
    var idleActors = 1_000
    /// IdleCPU: length of the idle window in seconds.
    var idleSeconds = 1.0
    /// MemoryPerIdleActor: actors created and kept alive.
    var memoryActors = 100_000

    /// FanIn: total messages (producers × messages per producer).
    var fanInMessages: Int { fanInProducers * fanInMessagesPerProducer }
    /// Whether the baselines run at the Troupe sizes (`--baseline-full`).
    var baselineFull: Bool {
        baselineCountingMessages == countingMessages
            && baselineFanInMessagesPerProducer == fanInMessagesPerProducer
            && baselinePingPongRoundTrips == pingPongRoundTrips
    }

    /// Whether the (workload, system) pair was selected by `--filter`.
    func includes(_ workload: Workload, system: String) -> Bool {
        if filters.isEmpty { return true }
        let names = [workload.rawValue.lowercased(), system.lowercased(),
                     "\(workload.rawValue)/\(system)".lowercased()]
        return filters.contains { filter in
            // "=Workload/System" selects exactly one row.
            if filter.hasPrefix("=") { return String(filter.dropFirst()).lowercased() == names[2] }
            let f = filter.lowercased()
            return names.contains { $0.contains(f) }
        }
    }

    static let usage = """
        usage: troupe-bench [--quick] [--json] [--filter NAME]... [--runs N] [--no-warmup] [--baseline-full]
          --quick          sizes 100x smaller (memory 10x); verifies every result, finishes in seconds
          --json           print a JSON array of measurements instead of the table
          --filter NAME    run only workloads/systems whose name contains NAME
                           (case-insensitive; repeatable; e.g. FanIn, Dispatch, Troupe);
                           --filter =Workload/System selects exactly that row
          --runs N         run each throughput workload N times, report the fastest (default 1)
          --no-warmup      skip the unreported 1/100-size warm-up run
          --baseline-full  run the Swift native / Dispatch baselines at the Troupe sizes
                           (default: Counting 1M, FanIn 8x100k, PingPong 1M for baselines)
        workloads: \(Workload.allCases.map(\.rawValue).joined(separator: ", "))
        """

    /// Parses the arguments (without the program name). Exits with status 2 on bad usage.
    static func parse(_ arguments: [String]) -> BenchConfig {
        var config = BenchConfig()
        var baselineFull = false
        var index = 0
        func value(for flag: String) -> String {
            index += 1
            guard index < arguments.count else { usageError("\(flag) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--quick":
                config.quick = true
            case "--json":
                config.json = true
            case "--filter":
                config.filters.append(value(for: argument))
            case "--runs":
                let text = value(for: argument)
                guard let runs = Int(text), runs >= 1 else { usageError("--runs needs a positive integer, got '\(text)'") }
                config.runs = runs
            case "--no-warmup":
                config.warmUp = false
            case "--baseline-full":
                baselineFull = true
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                if argument.hasPrefix("--filter=") {
                    config.filters.append(String(argument.dropFirst("--filter=".count)))
                } else {
                    usageError("unknown argument '\(argument)'")
                }
            }
            index += 1
        }
        if config.quick {
            config.countingMessages /= 100
            config.fanInMessagesPerProducer /= 100
            config.pingPongRoundTrips /= 100
            config.idleSeconds = 0.2
            config.memoryActors /= 10
            config.warmUp = false
            baselineFull = true
        }
        if baselineFull {
            config.baselineCountingMessages = config.countingMessages
            config.baselineFanInMessagesPerProducer = config.fanInMessagesPerProducer
            config.baselinePingPongRoundTrips = config.pingPongRoundTrips
        }
        let selected = Workload.allCases.filter { workload in
            [BenchSystem.swiftNative, BenchSystem.swiftNativeAsyncStream, BenchSystem.dispatch, BenchSystem.troupePrefix]
                .contains { config.includes(workload, system: $0) }
        }
        if selected.isEmpty {
            usageError("--filter \(config.filters.joined(separator: ", ")) matches no workload or system")
        }
        return config
    }

    private static func usageError(_ message: String) -> Never {
        printError("troupe-bench: \(message)\n\(usage)")
        exit(2)
    }
}

// MARK: - Measurement

/// One benchmark result. Throughput workloads fill `messages`, `seconds` and
/// `allocations`; IdleCPU additionally sets `cpuSeconds`, MemoryPerIdleActor
/// sets `heapBytes` (and uses `messages` for the number of actors).
struct Measurement: Sendable {
    /// Which workload was run.
    var workload: Workload
    /// System name, e.g. `BenchSystem.swiftNative`, `BenchSystem.dispatch`, "Troupe".
    var system: String
    /// Messages delivered (PingPong: round trips; IdleCPU/Memory: actors).
    var messages: Int
    /// Wall-clock seconds of the measured window.
    var seconds: Double
    /// Allocations (malloc-family calls, all threads) during the measured window.
    var allocations: UInt64
    /// Free-form remark shown in the Note column.
    var note: String
    /// IdleCPU only: process CPU seconds (user + sys, all threads) used during the window.
    var cpuSeconds: Double?
    /// MemoryPerIdleActor only: growth of heap bytes in use while creating the actors.
    var heapBytes: Int?

    init(workload: Workload, system: String, messages: Int, seconds: Double,
         allocations: UInt64, note: String = "", cpuSeconds: Double? = nil, heapBytes: Int? = nil) {
        self.workload = workload
        self.system = system
        self.messages = messages
        self.seconds = seconds
        self.allocations = allocations
        self.note = note
        self.cpuSeconds = cpuSeconds
        self.heapBytes = heapBytes
    }

    var isThroughput: Bool {
        switch workload {
        case .counting, .fanIn, .pingPong: return true
        case .idleCPU, .memoryPerIdleActor: return false
        }
    }
    var isTroupe: Bool { system.hasPrefix(BenchSystem.troupePrefix) }
    var messagesPerSecond: Double { Double(messages) / seconds }
    var nanosecondsPerMessage: Double { seconds * 1e9 / Double(messages) }
    var allocationsPerMessage: Double { Double(allocations) / Double(messages) }
    /// IdleCPU: CPU used during the window as a percentage of one core.
    var cpuPercentOfOneCore: Double? { cpuSeconds.map { $0 / seconds * 100 } }
    /// MemoryPerIdleActor: heap growth divided by the number of actors.
    var bytesPerActor: Double? { heapBytes.map { Double($0) / Double(messages) } }
}

// MARK: - Measuring helpers

/// Measures wall time (ContinuousClock) and allocation count of a window.
/// Works in synchronous and asynchronous code:
///
///     let stopwatch = Stopwatch()
///     ... work ...
///     let (seconds, allocations) = stopwatch.stop()
struct Stopwatch {
    private let allocationsAtStart: UInt64
    private let start: ContinuousClock.Instant

    init() {
        allocationsAtStart = CBenchSupport_allocation_count()
        start = ContinuousClock.now
    }

    func stop() -> (seconds: Double, allocations: UInt64) {
        let end = ContinuousClock.now
        let allocations = CBenchSupport_allocation_count() &- allocationsAtStart
        return ((end - start).seconds, allocations)
    }
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }
}

/// Runs one throughput workload if selected: an unreported warm-up at 1/100 of
/// `size` (full runs only), then `config.runs` measured runs; returns the fastest.
/// `run` receives the size to use and must verify its own result (see `verify`).
func benchmark(_ config: BenchConfig, _ workload: Workload, system: String, size: Int,
               _ run: (Int) -> Measurement) -> Measurement? {
    guard config.includes(workload, system: system) else { return nil }
    progress("\(workload.rawValue) / \(system)")
    if config.warmUp {
        _ = run(max(size / 100, 1))
    }
    var best = run(size)
    for _ in 1..<max(config.runs, 1) {
        let next = run(size)
        if next.seconds < best.seconds { best = next }
    }
    return best
}

/// IdleCPU: `makeActors` creates (and, if wanted, warms up) `config.idleActors`
/// actors; they are kept alive while the thread sleeps `config.idleSeconds`,
/// and the process CPU time used in that window is reported.
func measureIdleCPU<Actors>(_ config: BenchConfig, system: String, note: String = "",
                            makeActors: (Int) -> Actors) -> Measurement? {
    guard config.includes(.idleCPU, system: system) else { return nil }
    progress("\(Workload.idleCPU.rawValue) / \(system)")
    let actors = makeActors(config.idleActors)
    sleepSeconds(0.05)  // let set-up work (thread wake-ups, warm-up messages) settle
    let cpuAtStart = CBenchSupport_process_cpu_seconds()
    let stopwatch = Stopwatch()
    sleepSeconds(config.idleSeconds)
    let (seconds, allocations) = stopwatch.stop()
    let cpuSeconds = CBenchSupport_process_cpu_seconds() - cpuAtStart
    withExtendedLifetime(actors) {}
    verify(cpuSeconds >= 0, "\(Workload.idleCPU.rawValue) / \(system): getrusage failed")
    return Measurement(workload: .idleCPU, system: system, messages: config.idleActors,
                       seconds: seconds, allocations: allocations, note: note, cpuSeconds: cpuSeconds)
}

/// MemoryPerIdleActor: creates `config.memoryActors` actors with `makeActor`
/// (called with the index) and keeps them alive in a pre-sized array, so only
/// the actors themselves show up in the heap growth.
func measureMemoryPerActor<Actor>(_ config: BenchConfig, system: String, note: String = "",
                                  makeActor: (Int) -> Actor) -> Measurement? {
    guard config.includes(.memoryPerIdleActor, system: system) else { return nil }
    progress("\(Workload.memoryPerIdleActor.rawValue) / \(system)")
    let count = config.memoryActors
    var actors: [Actor] = []
    actors.reserveCapacity(count)
    let heapAtStart = CBenchSupport_heap_in_use()
    let stopwatch = Stopwatch()
    for index in 0..<count {
        actors.append(makeActor(index))
    }
    let (seconds, allocations) = stopwatch.stop()
    let heapAtEnd = CBenchSupport_heap_in_use()
    verify(actors.count == count, "\(Workload.memoryPerIdleActor.rawValue) / \(system): created \(actors.count) actors, expected \(count)")
    withExtendedLifetime(actors) {}
    let perActor = fixed(Double(allocations) / Double(count), 2)
    let allocationNote = "\(perActor) allocs/actor"
    return Measurement(workload: .memoryPerIdleActor, system: system, messages: count,
                       seconds: seconds, allocations: allocations,
                       note: note.isEmpty ? allocationNote : "\(allocationNote); \(note)",
                       heapBytes: heapAtEnd - heapAtStart)  // size_t imports as Int
}

/// Checks a workload's result. A wrong result is fatal in every mode: the
/// message goes to stderr and the process exits with status 1.
func verify(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition {
        printError("troupe-bench: WRONG RESULT: \(message())")
        exit(1)
    }
}

/// `verify(actual == expected)` with a uniform message.
func verifyEqual<T: Equatable>(_ actual: T, _ expected: T, _ workload: Workload, _ system: String,
                               _ what: String = "result") {
    verify(actual == expected, "\(workload.rawValue) / \(system): \(what) is \(actual), expected \(expected)")
}

/// Runs async work to completion from synchronous code (blocks the calling thread).
func runBlocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

// Written once by the task before signal(), read only after wait(): the semaphore orders the accesses.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// Sleeps the calling thread (not a task) for `seconds`.
func sleepSeconds(_ seconds: Double) {
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR {
        request = remaining
    }
}

/// Writes a line to stderr (file descriptor 2; the C `stderr` global is not concurrency-safe to reference).
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

// MARK: - Targets

/// One target of a Troupe row: the measured figure, the goal, and whether it is met
/// (`nil` when it cannot be evaluated, e.g. the Swift native baseline was filtered out).
struct TargetCheck: Sendable {
    var figure: String
    var goal: String
    var pass: Bool?

    var text: String {
        let verdict = pass.map { $0 ? "PASS" : "MISS" } ?? "n/a"
        return "\(figure) (target \(goal)) \(verdict)"
    }
}

/// "0 allocations per tell, amortized": fewer than one allocation per this many messages.
let amortizedZeroAllocationsPerMessage = 0.001

/// Targets for Troupe rows (other rows have none). `baseline` is the Swift native row
/// of the same workload, if it was run.
func targetChecks(_ m: Measurement, baseline: Measurement?) -> [TargetCheck] {
    guard m.isTroupe else { return [] }
    let ratio = baseline.map { m.messagesPerSecond / $0.messagesPerSecond }
    func ratioCheck(_ minimum: Double) -> TargetCheck {
        TargetCheck(figure: ratio.map { "\(fixed($0, 2))× native" } ?? "no native row",
                    goal: "≥ \(fixed(minimum, 1))× native", pass: ratio.map { $0 >= minimum })
    }
    let allocationCheck = TargetCheck(
        figure: "\(fixed(m.allocationsPerMessage, 4)) allocs/msg",
        goal: "0 amortized, < \(amortizedZeroAllocationsPerMessage)",
        pass: m.allocationsPerMessage < amortizedZeroAllocationsPerMessage)
    switch m.workload {
    case .counting:
        return [
            TargetCheck(figure: "\(rate(m.messagesPerSecond)) msg/s", goal: "≥ 50 M msg/s",
                        pass: m.messagesPerSecond >= 50e6),
            ratioCheck(20),
            allocationCheck,
        ]
    case .fanIn:
        return [ratioCheck(1), allocationCheck]
    case .pingPong:
        return [ratioCheck(1)]
    case .idleCPU:
        let percent = m.cpuPercentOfOneCore ?? .nan
        return [TargetCheck(figure: "\(fixed(percent, 3)) % core", goal: "≤ 1 % of one core", pass: percent <= 1)]
    case .memoryPerIdleActor:
        let bytes = m.bytesPerActor ?? .nan
        return [TargetCheck(figure: "\(fixed(bytes, 1)) B/actor", goal: "≤ 256 B/actor", pass: bytes <= 256)]
    }
}

// MARK: - Report

/// Prints machine information and the parameters of the run
/// (to stderr with `--json`, so stdout is only the JSON array).
func printHeader(_ config: BenchConfig) {
    func emit(_ text: String) {
        if config.json { printError(text) } else { print(text) }
    }
    emit("troupe-bench — \(config.quick ? "QUICK run (message counts ÷100, memory actors ÷10, idle 0.2 s; results verified, figures not representative)" : "full run")")
    #if DEBUG
    emit("WARNING: debug build; build with -c release for meaningful figures")
    #endif
    emit("machine: nproc=\(sysconf(Int32(_SC_NPROCESSORS_ONLN))), uname: \(unameString())")
    emit("date:    \(utcDate())")
    let troupeSizes = "Counting \(grouped(config.countingMessages)) msgs; "
        + "FanIn \(config.fanInProducers) × \(grouped(config.fanInMessagesPerProducer)) msgs; "
        + "PingPong \(grouped(config.pingPongRoundTrips)) round trips"
    if config.baselineFull {
        emit("params:  \(troupeSizes) (all systems)")
    } else {
        emit("params:  \(troupeSizes) (Troupe rows)")
        emit("         baselines: Counting \(grouped(config.baselineCountingMessages)) msgs; "
            + "FanIn \(config.fanInProducers) × \(grouped(config.baselineFanInMessagesPerProducer)) msgs; "
            + "PingPong \(grouped(config.baselinePingPongRoundTrips)) round trips (--baseline-full for Troupe sizes)")
    }
    emit("         IdleCPU \(grouped(config.idleActors)) actors × \(fixed(config.idleSeconds, 1)) s; "
        + "Memory \(grouped(config.memoryActors)) actors; best of \(config.runs) run(s)"
        + (config.warmUp ? " after a 1/100-size warm-up" : ", no warm-up")
        + (config.filters.isEmpty ? "" : "; filter: \(config.filters.joined(separator: ", "))"))
}

/// Prints the results: one table, or a JSON array with `--json`.
func report(_ results: [Measurement], _ config: BenchConfig) {
    let ordered = Workload.allCases.flatMap { workload in results.filter { $0.workload == workload } }
    if config.json {
        print(json(ordered))
    } else {
        printTable(ordered)
    }
}

private func baseline(for m: Measurement, in results: [Measurement]) -> Measurement? {
    results.first { $0.workload == m.workload && $0.system == BenchSystem.swiftNative }
}

private func printTable(_ results: [Measurement]) {
    let header = ["Workload", "System", "msgs", "msgs/s", "ns/msg", "× native", "allocs/msg", "Idle result", "Target", "Note"]
    let rightAligned: Set<Int> = [2, 3, 4, 5, 6, 7]
    var rows: [[String]] = []
    var previousWorkload: Workload?
    for m in results {
        let checks = targetChecks(m, baseline: baseline(for: m, in: results))
        var cells = [m.workload == previousWorkload ? "" : m.workload.rawValue, m.system]
        previousWorkload = m.workload
        if m.isThroughput {
            let ratio = m.isTroupe
                ? baseline(for: m, in: results).map { fixed(m.messagesPerSecond / $0.messagesPerSecond, 2) + "×" } ?? "n/a"
                : ""
            cells += [grouped(m.messages), rate(m.messagesPerSecond), fixed(m.nanosecondsPerMessage, 1), ratio,
                      fixed(m.allocationsPerMessage, 4), ""]
        } else if let percent = m.cpuPercentOfOneCore {
            cells += ["\(grouped(m.messages)) actors", "", "", "", "", "\(fixed(percent, 3)) % core"]
        } else if let bytes = m.bytesPerActor {
            cells += ["\(grouped(m.messages)) actors", "", "", "", "", "\(fixed(bytes, 1)) B/actor"]
        } else {
            cells += ["", "", "", "", "", ""]
        }
        cells.append(checks.first?.text ?? "")
        cells.append(m.note)
        rows.append(cells)
        for check in checks.dropFirst() {
            rows.append(["", "", "", "", "", "", "", "", check.text, ""])
        }
    }
    var widths = header.map(\.count)
    for row in rows {
        for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
    }
    func line(_ cells: [String]) -> String {
        var text = ""
        for (column, cell) in cells.enumerated() {
            let padding = String(repeating: " ", count: widths[column] - cell.count)
            text += column == 0 ? "" : "  "
            text += rightAligned.contains(column) ? padding + cell : cell + padding
        }
        while text.hasSuffix(" ") { text.removeLast() }
        return text
    }
    print("")
    print(line(header))
    print(String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1)))
    var lastWorkload: Workload?
    for (index, row) in rows.enumerated() {
        if index > 0, !row[0].isEmpty, lastWorkload != nil { print("") }
        if !row[0].isEmpty { lastWorkload = Workload(rawValue: row[0]) }
        print(line(row))
    }
    print("")
    print("""
        msgs/s and ns/msg: PingPong counts one round trip (request + reply) as one msg.
        × native: Troupe msgs/s ÷ '\(BenchSystem.swiftNative)' msgs/s of the same workload \
        (Counting: AsyncStream → consumer task; FanIn, PingPong: awaited actor calls).
        allocs/msg: malloc-family calls by all threads during the timed window ÷ msgs \
        (target '0 amortized' = fewer than 1 per \(Int(1 / amortizedZeroAllocationsPerMessage)) msgs).
        Targets apply to Troupe rows; PASS/MISS is informational and never changes the exit status.
        """)
}

private func json(_ results: [Measurement]) -> String {
    var objects: [String] = []
    for m in results {
        let base = baseline(for: m, in: results)
        var fields: [(String, String)] = [
            ("workload", jsonString(m.workload.rawValue)),
            ("system", jsonString(m.system)),
            ("messages", String(m.messages)),
            ("seconds", jsonNumber(m.seconds)),
            ("allocations", String(m.allocations)),
            ("note", jsonString(m.note)),
        ]
        if m.isThroughput {
            fields += [
                ("msgs_per_second", jsonNumber(m.messagesPerSecond)),
                ("ns_per_msg", jsonNumber(m.nanosecondsPerMessage)),
                ("allocs_per_msg", jsonNumber(m.allocationsPerMessage)),
            ]
            if m.isTroupe {
                fields.append(("ratio_vs_native", base.map { jsonNumber(m.messagesPerSecond / $0.messagesPerSecond) } ?? "null"))
            }
        }
        if let cpu = m.cpuSeconds {
            fields += [("cpu_seconds", jsonNumber(cpu)),
                       ("cpu_percent_of_one_core", jsonNumber(m.cpuPercentOfOneCore ?? .nan))]
        }
        if let heap = m.heapBytes {
            fields += [("heap_bytes", String(heap)), ("bytes_per_actor", jsonNumber(m.bytesPerActor ?? .nan))]
        }
        let checks = targetChecks(m, baseline: base).map { check in
            "{\"figure\": \(jsonString(check.figure)), \"target\": \(jsonString(check.goal)), \"pass\": \(check.pass.map { String($0) } ?? "null")}"
        }
        fields.append(("targets", "[" + checks.joined(separator: ", ") + "]"))
        objects.append("  {" + fields.map { "\(jsonString($0.0)): \($0.1)" }.joined(separator: ", ") + "}")
    }
    return "[\n" + objects.joined(separator: ",\n") + "\n]"
}

private func jsonNumber(_ value: Double) -> String {
    value.isFinite ? String(value) : "null"
}

private func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        case "\r": out += "\\r"
        default:
            if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

// MARK: - Formatting (no Foundation)

/// `value` with exactly `decimals` digits after the point.
func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value > 0 ? "inf" : "-inf") }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    guard scaled < 9e18 else { return String(value) }
    let digits = UInt64(scaled)
    let unit = UInt64(scale)
    var text = String(digits / unit)
    if decimals > 0 {
        let fraction = String(digits % unit)
        text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }
    return (value < 0 && digits != 0 ? "-" : "") + text
}

/// A rate with an SI suffix, e.g. "12.34 M".
func rate(_ value: Double) -> String {
    switch abs(value) {
    case 1e9...: return fixed(value / 1e9, 2) + " G"
    case 1e6...: return fixed(value / 1e6, 2) + " M"
    case 1e3...: return fixed(value / 1e3, 2) + " k"
    default: return fixed(value, 1)
    }
}

/// An integer with thousands separators, e.g. "10,000,000".
func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var out = ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { out += "," }
        out.append(digit)
    }
    return (value < 0 ? "-" : "") + out
}

private func unameString() -> String {
    var info = utsname()
    guard uname(&info) == 0 else { return "unknown" }
    func field<T>(_ value: T) -> String {
        withUnsafeBytes(of: value) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
    return [field(info.sysname), field(info.nodename), field(info.release), field(info.version), field(info.machine)]
        .joined(separator: " ")
}

private func utcDate() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    var buffer = [CChar](repeating: 0, count: 64)
    let length = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S UTC", &parts)
    return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
