// The allocation guard: Troupe rows at guard sizes, allocations per unit compared with the
// thresholds committed in Benchmarks/Thresholds/allocations.json. Counts only, never time.
//
//     troupe-bench --check-allocations Benchmarks/Thresholds/allocations.json   # exit 1 on a regression
//     troupe-bench --record-allocations /tmp/allocations.json                  # measure, write a file
//
// Each row runs once small (warm-up: envelope pools, thread caches) and then `--runs` times
// (default 3); the run with the fewest allocations counts, because one-way workloads allocate
// envelopes only while the producer outruns the consumer, which depends on scheduling.
//
// File format:
//     { "comment": "...", "recorded": "...",
//       "rows": { "PingPong/Troupe": { "allocs_per_msg": 0.0, "tolerance": 0.001 }, ... } }
// A row fails when allocs/msg > allocs_per_msg + tolerance, or when it has no entry.

import Glibc

func runAllocationGuard(_ results: [Measurement], _ config: BenchConfig) {
    if let path = config.recordAllocationsFile {
        recordAllocations(results, path: path)
        return
    }
    guard let path = config.checkAllocationsFile else { return }
    guard let text = readTextFile(path) else {
        printError("troupe-bench: cannot read \(path)")
        exit(2)
    }
    let thresholds: [String: (limit: Double, tolerance: Double)]
    do {
        thresholds = try parseThresholds(text)
    } catch {
        printError("troupe-bench: \(path): \(error)")
        exit(2)
    }
    var failures = 0
    var lines: [[String]] = [["Row", "allocs/msg", "threshold", "tolerance", "verdict"]]
    for m in results {
        let key = "\(m.workload.rawValue)/\(m.system)"
        let measured = m.allocationsPerMessage
        guard let entry = thresholds[key] else {
            failures += 1
            lines.append([key, fixed(measured, 4), "-", "-", "FAIL (no threshold; add one, see --record-allocations)"])
            continue
        }
        let pass = measured <= entry.limit + entry.tolerance
        if !pass { failures += 1 }
        var verdict = pass ? "ok" : "FAIL (exceeds threshold + tolerance)"
        if pass && entry.limit >= 0.5 && measured < entry.limit * 0.5 {
            verdict = "ok (well below: consider lowering the threshold)"
        }
        lines.append([key, fixed(measured, 4), fixed(entry.limit, 4), fixed(entry.tolerance, 4), verdict])
    }
    let widths = (0..<5).map { column in lines.map { $0[column].count }.max()! }
    for line in lines {
        print(line.enumerated().map { pad($0.element, widths[$0.offset]) }.joined(separator: "  "))
    }
    let unmeasured = thresholds.keys.filter { key in !results.contains { "\($0.workload.rawValue)/\($0.system)" == key }
    }
    if !unmeasured.isEmpty && config.filters.isEmpty {
        print("note: thresholds without a row (renamed or removed?): \(unmeasured.sorted().joined(separator: ", "))")
    }
    if failures > 0 {
        printError(
            "troupe-bench: ALLOCATION GUARD FAILED: \(failures) row(s) allocate more than their threshold (\(config.checkAllocationsFile!))"
        )
        exit(1)
    }
    print("allocation guard: all \(results.count) rows within their thresholds")
}

/// Writes the measured counts as thresholds. Tolerance: 25 % of the figure plus 0.002 per msg,
/// enough for run-to-run scheduling noise, far below one more allocation per message.
private func recordAllocations(_ results: [Measurement], path: String) {
    var entries: [String] = []
    for m in results {
        let measured = m.allocationsPerMessage
        let limit = (measured * 10_000).rounded(.up) / 10_000
        let tolerance = ((measured * 0.25 + 0.002) * 10_000).rounded(.up) / 10_000
        entries.append(
            "    \(jsonString("\(m.workload.rawValue)/\(m.system)")): {\"allocs_per_msg\": \(limit), \"tolerance\": \(tolerance)}"
        )
        print("\(m.workload.rawValue)/\(m.system): \(fixed(measured, 4)) allocs/\(m.unit)")
    }
    let text = """
        {
          "comment": "Allocation thresholds for troupe-bench --check-allocations: malloc-family calls per unit (see Benchmarks/README.md), Troupe rows at guard sizes, fewest of 3 runs. A row fails above allocs_per_msg + tolerance.",
          "recorded": \(jsonString("\(utcDate()), troupe-bench --record-allocations")),
          "rows": {
        \(entries.joined(separator: ",\n"))
          }
        }

        """
    guard let file = fopen(path, "w") else {
        printError("troupe-bench: cannot write \(path)")
        exit(2)
    }
    fputs(text, file)
    fclose(file)
    print("wrote \(results.count) thresholds to \(path)")
}

private func readTextFile(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count <= 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

private func parseThresholds(_ text: String) throws(JSONError) -> [String: (limit: Double, tolerance: Double)] {
    guard case .object(let root) = try JSONValue.parse(text), case .object(let rows)? = root["rows"] else {
        throw JSONError(message: "expected an object with a \"rows\" object")
    }
    var result: [String: (limit: Double, tolerance: Double)] = [:]
    for (key, value) in rows {
        guard case .object(let entry) = value, case .number(let limit)? = entry["allocs_per_msg"] else {
            throw JSONError(message: "row \(key): expected {\"allocs_per_msg\": number, \"tolerance\": number}")
        }
        var tolerance = 0.0
        if case .number(let given)? = entry["tolerance"] { tolerance = given }
        result[key] = (limit, tolerance)
    }
    return result
}

// MARK: - A minimal JSON reader (no Foundation in this executable)

struct JSONError: Error, CustomStringConvertible {
    var message: String
    var description: String { "invalid JSON: \(message)" }
}

enum JSONValue {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    static func parse(_ text: String) throws(JSONError) -> JSONValue {
        var parser = Parser(bytes: Array(text.utf8))
        let value = try parser.value()
        parser.skipSpace()
        guard parser.index == parser.bytes.count else {
            throw JSONError(message: "trailing characters at byte \(parser.index)")
        }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ byte: UInt8) throws(JSONError) {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else {
                throw JSONError(message: "expected '\(Character(Unicode.Scalar(byte)))' at byte \(index)")
            }
            index += 1
        }

        mutating func value() throws(JSONError) -> JSONValue {
            skipSpace()
            guard index < bytes.count else { throw JSONError(message: "unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                var object: [String: JSONValue] = [:]
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(object) }
                while true {
                    skipSpace()
                    let key = try string()
                    try expect(UInt8(ascii: ":"))
                    object[key] = try value()
                    skipSpace()
                    guard index < bytes.count else { throw JSONError(message: "unterminated object") }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    try expect(UInt8(ascii: "}"))
                    return .object(object)
                }
            case UInt8(ascii: "["):
                index += 1
                var array: [JSONValue] = []
                skipSpace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(array) }
                while true {
                    array.append(try value())
                    skipSpace()
                    guard index < bytes.count else { throw JSONError(message: "unterminated array") }
                    if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                    try expect(UInt8(ascii: "]"))
                    return .array(array)
                }
            case UInt8(ascii: "\""):
                return .string(try string())
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "n"): return try literal("null", .null)
            default:
                let start = index
                while index < bytes.count, "+-0123456789.eE".utf8.contains(bytes[index]) { index += 1 }
                guard let number = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else {
                    throw JSONError(message: "bad value at byte \(start)")
                }
                return .number(number)
            }
        }

        mutating func literal(_ word: String, _ value: JSONValue) throws(JSONError) -> JSONValue {
            let utf8 = Array(word.utf8)
            guard index + utf8.count <= bytes.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
                throw JSONError(message: "bad literal at byte \(index)")
            }
            index += utf8.count
            return value
        }

        /// A string without escapes other than \" and \\ (all this file format needs).
        mutating func string() throws(JSONError) -> String {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw JSONError(message: "expected a string at byte \(index)")
            }
            index += 1
            var out: [UInt8] = []
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                if bytes[index] == UInt8(ascii: "\\"), index + 1 < bytes.count {
                    index += 1
                    switch bytes[index] {
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    default: out.append(bytes[index])
                    }
                } else {
                    out.append(bytes[index])
                }
                index += 1
            }
            guard index < bytes.count else { throw JSONError(message: "unterminated string") }
            index += 1
            return String(decoding: out, as: UTF8.self)
        }
    }
}
