// The report: header (machine, parameters), targets, one table or a JSON array.

import Glibc

// MARK: - Targets

/// One target of a Troupe row: the measured figure, the goal, and whether it is met (`nil` when
/// it cannot be evaluated, e.g. the Swift native row was filtered out).
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
/// Spawn plus first message, ns per actor.
let spawnTargetNanoseconds = 80.0
/// TimersLateness: p99 of (handled − intended deadline), on an idle machine.
let timerLatenessP99TargetNanoseconds: UInt64 = 1_000_000
/// TimersMemory: heap bytes per active timer.
let timerMemoryTargetBytes = 200.0
/// AskLatency targets of the executor issue (14), by row: (p50 ns, mean ns), either may be absent.
let askLatencyTargets: [String: (p50: Double?, mean: Double?)] = [
    "Troupe (ask from a task on its executor)": (p50: 400, mean: 600),
    "Troupe (ask from a task)": (p50: nil, mean: 5_000),
]
/// Restart: the row that restart rows are compared with (a fresh actor instead of a restart).
let restartBaselineSystem = "Troupe (spawn+stop)"

/// How many times faster than the Swift native row `m` is: throughput ratio, or for latency
/// rows the ratio of the medians (native p50 ÷ this p50).
func ratioToNative(_ m: Measurement, baseline: Measurement?) -> Double? {
    guard let baseline else { return nil }
    if m.workload.kind == .latency {
        guard let mine = m.latency, let theirs = baseline.latency, mine.p50 > 0 else { return nil }
        return Double(theirs.p50) / Double(mine.p50)
    }
    return m.messagesPerSecond / baseline.messagesPerSecond
}

/// The one-way Swift form of a workload (AsyncStream), where one is measured.
let oneWayNativeSystem = "Swift native (AsyncStream)"

/// Native actors on Troupe serial executors (issue 14): on one shared executor, within 1.5× of
/// Swift's default executor; on one executor each, at least as fast as the native form whose
/// actors each have a thread of their own.
func nativeOnTroupeChecks(_ m: Measurement, in results: [Measurement]) -> [TargetCheck] {
    func rate(of system: String) -> Double? {
        results.first { $0.workload == m.workload && $0.system == system }?.messagesPerSecond
    }
    switch m.system {
    case BenchSystem.nativeOnTroupeOneExecutor:
        let ratio = rate(of: BenchSystem.swiftNative).map { m.messagesPerSecond / $0 }
        return [
            TargetCheck(
                figure: ratio.map { "\(fixed($0, 2))× Swift native (default executor)" } ?? "no Swift native row",
                goal: "≥ 0.67× (within 1.5×)", pass: ratio.map { $0 >= 1 / 1.5 })
        ]
    case BenchSystem.nativeOnTroupeTwoExecutors:
        guard let base = rate(of: BenchSystem.swiftNativeTwoExecutors) else { return [] }
        let ratio = m.messagesPerSecond / base
        return [
            TargetCheck(
                figure: "\(fixed(ratio, 2))× \(BenchSystem.swiftNativeTwoExecutors)", goal: "≥ 1.0×",
                pass: ratio >= 1)
        ]
    default:
        return []
    }
}

/// Targets of Troupe rows (other rows have none, but native actors on Troupe executors).
func targetChecks(_ m: Measurement, in results: [Measurement]) -> [TargetCheck] {
    guard m.isTroupe else { return nativeOnTroupeChecks(m, in: results) }
    let baseline = baseline(for: m, in: results)
    var checks: [TargetCheck] = []
    if m.hasRate && m.workload.hasNativeBaseline {
        let minimum = m.workload.isOneWay ? 20.0 : 1.0
        let ratio = ratioToNative(m, baseline: baseline)
        let what = m.workload.kind == .latency ? " (p50)" : ""
        checks.append(
            TargetCheck(
                figure: ratio.map { "\(fixed($0, 2))× native\(what)" } ?? "no native row",
                goal: "≥ \(fixed(minimum, 1))×", pass: ratio.map { $0 >= minimum }))
        // For context only: the same ratio against Swift's one-way form, where it was measured.
        if m.workload.isOneWay,
            let oneWay = results.first(where: { $0.workload == m.workload && $0.system == oneWayNativeSystem })
        {
            let ratio = m.messagesPerSecond / oneWay.messagesPerSecond
            checks.append(
                TargetCheck(
                    figure: "\(fixed(ratio, 1))× one-way native (AsyncStream; context)",
                    goal: "≥ 20.0×", pass: ratio >= 20))
        }
    }
    let allocationCheck = TargetCheck(
        figure: "\(fixed(m.allocationsPerMessage, 4)) allocs/msg",
        goal: "< \(amortizedZeroAllocationsPerMessage)",
        pass: m.allocationsPerMessage < amortizedZeroAllocationsPerMessage)
    switch m.workload {
    case .counting:
        checks.append(
            TargetCheck(
                figure: "\(rate(m.messagesPerSecond)) msg/s", goal: "≥ 50 M msg/s",
                pass: m.messagesPerSecond >= 50e6))
        checks.append(allocationCheck)
    case .fanIn, .pubSubFanOut:
        checks.append(allocationCheck)
    case .spawn:
        checks.append(
            TargetCheck(
                figure: "\(fixed(m.nanosecondsPerMessage, 1)) ns/actor",
                goal: "≤ \(Int(spawnTargetNanoseconds)) ns", pass: m.nanosecondsPerMessage <= spawnTargetNanoseconds))
    case .idleCPU:
        let percent = m.cpuPercentOfOneCore ?? .nan
        checks.append(TargetCheck(figure: "\(fixed(percent, 3)) % core", goal: "≤ 1 % of one core", pass: percent <= 1))
    case .memoryPerIdleActor:
        let bytes = m.bytesPerUnit ?? .nan
        checks.append(TargetCheck(figure: "\(fixed(bytes, 1)) B/actor", goal: "≤ 256 B/actor", pass: bytes <= 256))
    case .restart where m.system != restartBaselineSystem:
        let base = results.first { $0.workload == .restart && $0.system == restartBaselineSystem }
        checks.append(
            TargetCheck(
                figure: "\(fixed(m.nanosecondsPerMessage, 1)) ns/restart vs "
                    + (base.map { "\(fixed($0.nanosecondsPerMessage, 1)) ns spawn+stop" } ?? "no spawn+stop row"),
                goal: "restart ≤ spawn+stop", pass: base.map { m.nanosecondsPerMessage <= $0.nanosecondsPerMessage }))
    case .askLatency:
        if let goal = askLatencyTargets[m.system], let latency = m.latency {
            if let p50 = goal.p50 {
                checks.append(
                    TargetCheck(
                        figure: "p50 \(latency.p50) ns", goal: "p50 ≤ \(Int(p50)) ns", pass: Double(latency.p50) <= p50)
                )
            }
            if let mean = goal.mean {
                checks.append(
                    TargetCheck(
                        figure: "mean \(fixed(m.nanosecondsPerMessage, 1)) ns", goal: "mean ≤ \(Int(mean)) ns",
                        pass: m.nanosecondsPerMessage <= mean))
            }
        }
    case .timersLateness:
        let p99 = m.latency?.p99 ?? .max
        checks.append(
            TargetCheck(
                figure: "p99 late \(microseconds(p99))",
                goal: "≤ 1 ms on an idle machine", pass: p99 <= timerLatenessP99TargetNanoseconds))
    case .timersMemory:
        // A heap that shrank over the window means other work freed memory meanwhile: no verdict.
        let bytes = m.bytesPerUnit ?? .nan
        let valid = bytes > 0
        checks.append(
            TargetCheck(
                figure: valid ? "\(fixed(bytes, 1)) B/timer" : "\(fixed(bytes, 1)) B/timer (heap shrank: invalid)",
                goal: "≤ \(Int(timerMemoryTargetBytes)) B/timer",
                pass: valid ? bytes <= timerMemoryTargetBytes : nil))
    case .timersIdleCPU:
        let percent = m.cpuPercentOfOneCore ?? .nan
        checks.append(TargetCheck(figure: "\(fixed(percent, 3)) % core", goal: "≤ 1 % of one core", pass: percent <= 1))
    default:
        break
    }
    return checks
}

// MARK: - Header

/// Prints machine information and the parameters (to stderr with `--json`).
func printHeader(_ config: BenchConfig, arguments: [String]) {
    func emit(_ text: String) {
        if config.json { printError(text) } else { print(text) }
    }
    let mode =
        config.allocationGuard
        ? "ALLOCATION GUARD (Troupe rows at guard sizes; counts only)"
        : config.quick ? "QUICK run (small sizes; results verified, figures not representative)" : "full run"
    emit("troupe-bench — \(mode)")
    #if DEBUG
        emit("WARNING: debug build; build with -c release for meaningful figures")
    #endif
    emit("command: troupe-bench \(arguments.joined(separator: " "))")
    emit("machine: nproc=\(sysconf(Int32(_SC_NPROCESSORS_ONLN))), \(cpuModel()), uname: \(unameString())")
    emit("date:    \(utcDate()); load average at start: \(loadAverage())")
    emit(
        "params:  sizes as Troupe / Swift native / Dispatch"
            + (config.quick || config.allocationGuard ? " (one size for all)" : "")
            + "; best of \(config.runs) run(s)" + (config.warmUp ? " after a small warm-up" : ", no warm-up")
            + (config.filters.isEmpty ? "" : "; filter: \(config.filters.joined(separator: ", "))"))
    for workload in Workload.allCases {
        let spec = config.sizes[workload]!
        let sizes: String
        if config.quick || config.allocationGuard {
            sizes = grouped(config.size(workload, .troupe))
        } else {
            sizes = [SizeFamily.troupe, .native, .dispatch].map { grouped(config.size(workload, $0)) }.joined(
                separator: " / ")
        }
        var fixedPart = ""
        switch workload {
        case .threadRing: fixedPart = "\(config.ringActors) actors; "
        case .chameneos: fixedPart = "\(config.chameneos) chameneos; "
        case .big: fixedPart = "\(config.bigActors) actors; "
        case .forkJoinThroughput: fixedPart = "\(config.forkJoinActors) actors; "
        case .fanIn: fixedPart = "\(config.fanInProducers) producers; "
        case .pool: fixedPart = "\(config.poolMembers) members; "
        case .poolSkew: fixedPart = "\(config.poolMembers) members, spin \(config.poolSkewSpin) (member 0: ×10); "
        case .pubSubFanOut: fixedPart = "\(grouped(config.pubSubSubscribers)) subscribers; "
        case .restart: fixedPart = "requestRestart: rounds of \(grouped(config.restartRoundActors)) actors; "
        case .timersArmCancel:
            fixedPart = "\(grouped(config.activeTimers)) other timers active (\(config.timersPerActor) per actor); "
        case .timersLateness:
            fixedPart =
                "deadlines uniform over \(fixed(config.latenessWindow.from, 2))–\(fixed(config.latenessWindow.to, 2)) s after arming; "
        case .timersMemory:
            emit(
                "         \(pad(workload.rawValue, 19)) \(grouped(config.activeTimers)) timers armed 1–2 h ahead, \(config.timersPerActor) per actor (second row: 1 per actor)"
            )
            continue
        case .timersIdleCPU:
            emit(
                "         \(pad(workload.rawValue, 19)) \(grouped(config.activeTimers)) timers armed 1–2 h ahead, idle for \(fixed(config.idleSeconds, 1)) s"
            )
            continue
        case .idleCPU:
            emit(
                "         \(pad(workload.rawValue, 19)) \(grouped(config.idleActors)) actors idle for \(fixed(config.idleSeconds, 1)) s"
            )
            continue
        case .memoryPerIdleActor:
            emit("         \(pad(workload.rawValue, 19)) \(grouped(config.memoryActors)) actors")
            continue
        default: break
        }
        let secondary = spec.secondary.isEmpty || config.quick || config.allocationGuard ? "" : " (\(spec.secondary))"
        emit("         \(pad(workload.rawValue, 19)) \(fixedPart)\(sizes) \(spec.meaning)\(secondary)")
    }
}

// MARK: - Report

/// Prints the results: one table, or a JSON array with `--json`.
func report(_ results: [Measurement], _ config: BenchConfig) {
    let ordered = Workload.allCases.flatMap { workload in results.filter { $0.workload == workload } }
    if config.json {
        print(json(ordered))
    } else {
        printTable(ordered)
    }
}

/// The row a Troupe row is compared with: the native row that really passes a message where the
/// plain "Swift native" row does not (see ``BenchSystem/messagePassingNative``), else that row.
func baseline(for m: Measurement, in results: [Measurement]) -> Measurement? {
    let system = BenchSystem.messagePassingNative[m.workload] ?? BenchSystem.swiftNative
    return results.first { $0.workload == m.workload && $0.system == system }
        ?? results.first { $0.workload == m.workload && $0.system == BenchSystem.swiftNative }
}

/// "83.6 MB (+72.1)": the row's peak RSS and how much it rose above the RSS at the row's start.
private func peakText(_ m: Measurement) -> String {
    guard let peak = m.peakRSS else { return "n/a" }
    let megabytes = fixed(Double(peak) / 1_048_576, 1) + " MB"
    guard let start = m.rssAtStart else { return megabytes }
    return megabytes + " (+\(fixed(Double(max(0, peak - start)) / 1_048_576, 1)))"
}

private func resultText(_ m: Measurement) -> String {
    if let latency = m.latency {
        if m.workload.kind == .lateness {
            return
                "late p50 \(microseconds(latency.p50)) · p99 \(microseconds(latency.p99)) · p99.9 \(microseconds(latency.p999))"
                + " · max \(microseconds(latency.max))"
        }
        return "p50 \(duration(latency.p50)) · p99 \(duration(latency.p99)) · p99.9 \(duration(latency.p999))"
    }
    if let percent = m.cpuPercentOfOneCore { return "\(fixed(percent, 3)) % core" }
    if let bytes = m.bytesPerUnit {
        return "\(fixed(bytes, 1)) B/\(m.workload.unit)" + (m.rssBytesPerUnit.map { " (RSS \(fixed($0, 1)) B)" } ?? "")
    }
    return ""
}

private func printTable(_ results: [Measurement]) {
    let header = [
        "Workload", "System", "size", "msgs/s", "ns/msg", "× native", "allocs/msg", "peak RSS", "Result", "Target",
        "Note",
    ]
    let rightAligned: Set<Int> = [2, 3, 4, 5, 6, 7]
    var rows: [[String]] = []
    var previousWorkload: Workload?
    for m in results {
        let base = baseline(for: m, in: results)
        let checks = targetChecks(m, in: results)
        var cells = [
            m.workload == previousWorkload ? "" : m.workload.rawValue, m.system,
            "\(grouped(m.messages)) \(m.unitPlural)",
        ]
        previousWorkload = m.workload
        if m.hasRate {
            let ratio =
                m.system == base?.system
                ? "1.00×"
                : ratioToNative(m, baseline: base).map { fixed($0, 2) + "×" } ?? "n/a"
            cells += [
                rate(m.messagesPerSecond), fixed(m.nanosecondsPerMessage, 1), ratio,
                m.allocationsCounted ? fixed(m.allocationsPerMessage, 4) : "n/a",
            ]
        } else {
            cells += ["", "", "", m.allocationsCounted ? fixed(m.allocationsPerMessage, 2) : "n/a"]
        }
        cells.append(peakText(m))
        cells.append(resultText(m))
        cells.append(checks.first?.text ?? "")
        cells.append(m.note)
        rows.append(cells)
        for check in checks.dropFirst() {
            rows.append(["", "", "", "", "", "", "", "", "", check.text, ""])
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
    print("load average at end: \(loadAverage())")
    print(line(header))
    print(String(repeating: "-", count: widths.reduce(0, +) + 2 * (widths.count - 1)))
    for (index, row) in rows.enumerated() {
        if index > 0, !row[0].isEmpty { print("") }
        print(line(row))
    }
    print("")
    print(
        """
        msgs/s, ns/msg: per unit of the workload (size column): PingPong a round trip (2 messages), \
        ThreadRing a hop, Chameneos a meeting (4 messages), Big a ping answered by a pong, Fibonacci/ForkJoinCreation/Spawn \
        an actor created and messaged, AskLatency an ask.
        × native: rate ÷ the '\(BenchSystem.swiftNative)' row's rate (the fastest idiomatic Swift form, see Note), \
        except PingPong and Counting, where that row is an awaited call Swift completes on the caller's thread (no hop, \
        no message): there the baseline is the native row that really passes messages ('Swift native (2 executors)', \
        'Swift native (AsyncStream)'); \
        latency rows: native p50 ÷ p50. Target ≥ 20× on one-way workloads (Counting, ThreadRing, Chameneos, Big), ≥ 1× elsewhere.
        Restart: a restart (spawn+stop row: an actor spawned and stopped; native row: an actor created and called). \
        TimersArmCancel: one startSingleTimer + cancelTimer in a handler. TimersLateness: handled − intended deadline, in µs.
        allocs/msg: malloc-family calls by all threads in the timed window ÷ units. peak RSS: VmHWM during the row, set-up \
        included (malloc_trim + clear_refs before it); (+N): MB above the RSS at the row's start (memory kept by earlier rows is reused).
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
            ("unit", jsonString(m.unit)),
            ("messages", String(m.messages)),
            ("seconds", jsonNumber(m.seconds)),
            ("allocations", m.allocationsCounted ? String(m.allocations) : "null"),
            ("allocs_per_msg", m.allocationsCounted ? jsonNumber(m.allocationsPerMessage) : "null"),
            ("peak_rss_bytes", m.peakRSS.map { String($0) } ?? "null"),
            ("rss_at_start_bytes", m.rssAtStart.map { String($0) } ?? "null"),
            ("note", jsonString(m.note)),
        ]
        if m.hasRate {
            fields += [
                ("msgs_per_second", jsonNumber(m.messagesPerSecond)),
                ("ns_per_msg", jsonNumber(m.nanosecondsPerMessage)),
                ("ratio_vs_native", ratioToNative(m, baseline: base).map(jsonNumber) ?? "null"),
            ]
        }
        if let latency = m.latency {
            fields.append(
                (
                    "latency_ns",
                    "{\"count\": \(latency.count), \"p50\": \(latency.p50), \"p99\": \(latency.p99), "
                        + "\"p99_9\": \(latency.p999), \"max\": \(latency.max), \"mean\": \(jsonNumber(latency.mean))}"
                ))
            if m.workload.kind == .lateness {
                func us(_ ns: UInt64) -> String { jsonNumber(Double(ns) / 1e3) }
                fields.append(
                    (
                        "lateness_us",
                        "{\"p50\": \(us(latency.p50)), \"p99\": \(us(latency.p99)), "
                            + "\"p99_9\": \(us(latency.p999)), \"max\": \(us(latency.max))}"
                    ))
            }
        }
        if let cpu = m.cpuSeconds {
            fields += [
                ("cpu_seconds", jsonNumber(cpu)),
                ("cpu_percent_of_one_core", jsonNumber(m.cpuPercentOfOneCore ?? .nan)),
            ]
        }
        if let heap = m.heapBytes {
            fields += [
                ("heap_bytes", String(heap)), ("bytes_per_\(m.workload.unit)", jsonNumber(m.bytesPerUnit ?? .nan)),
            ]
        }
        if let rss = m.rssBytes {
            fields += [
                ("rss_bytes", String(rss)), ("rss_bytes_per_\(m.workload.unit)", jsonNumber(m.rssBytesPerUnit ?? .nan)),
            ]
        }
        let checks = targetChecks(m, in: results).map { check in
            "{\"figure\": \(jsonString(check.figure)), \"target\": \(jsonString(check.goal)), \"pass\": \(check.pass.map { String($0) } ?? "null")}"
        }
        fields.append(("targets", "[" + checks.joined(separator: ", ") + "]"))
        objects.append("  {" + fields.map { "\(jsonString($0.0)): \($0.1)" }.joined(separator: ", ") + "}")
    }
    return "[\n" + objects.joined(separator: ",\n") + "\n]"
}

func jsonNumber(_ value: Double) -> String {
    value.isFinite ? String(value) : "null"
}

func jsonString(_ text: String) -> String {
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

/// Nanoseconds as microseconds with one decimal, e.g. "52.3 µs" (lateness rows).
func microseconds(_ nanoseconds: UInt64) -> String {
    fixed(Double(nanoseconds) / 1e3, 1) + " µs"
}

/// Nanoseconds as "850 ns", "12.3 µs", "4.56 ms".
func duration(_ nanoseconds: UInt64) -> String {
    let value = Double(nanoseconds)
    switch value {
    case 1e9...: return fixed(value / 1e9, 2) + " s"
    case 1e6...: return fixed(value / 1e6, 2) + " ms"
    case 1e4...: return fixed(value / 1e3, 1) + " µs"
    case 1e3...: return fixed(value / 1e3, 2) + " µs"
    default: return "\(nanoseconds) ns"
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

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

private func unameString() -> String {
    var info = utsname()
    guard uname(&info) == 0 else { return "unknown" }
    func field<T>(_ value: T) -> String {
        withUnsafeBytes(of: value) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
    return [field(info.sysname), field(info.release), field(info.machine)].joined(separator: " ")
}

/// The "model name" line of /proc/cpuinfo.
private func cpuModel() -> String {
    guard let file = fopen("/proc/cpuinfo", "r") else { return "cpu unknown" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 512)
    while fgets(&buffer, Int32(buffer.count), file) != nil {
        let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if line.hasPrefix("model name"), let colon = line.firstIndex(of: ":") {
            return String(line[line.index(after: colon)...]).trimmingSpaces()
        }
    }
    return "cpu unknown"
}

extension String {
    func trimmingSpaces() -> String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" || first == "\n" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\n" { text.removeLast() }
        return String(text)
    }
}

/// The first three fields of /proc/loadavg (1, 5, 15 minutes): other work on the machine skews
/// every figure, so the report says how busy it was.
func loadAverage() -> String {
    guard let file = fopen("/proc/loadavg", "r") else { return "unknown" }
    defer { fclose(file) }
    var buffer = [CChar](repeating: 0, count: 128)
    guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "unknown" }
    let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return line.split(separator: " ").prefix(3).joined(separator: " ")
}

func utcDate() -> String {
    var now = time(nil)
    var parts = tm()
    gmtime_r(&now, &parts)
    var buffer = [CChar](repeating: 0, count: 64)
    let length = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S UTC", &parts)
    return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
