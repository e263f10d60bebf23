// The cluster rows' table: measured figures, and each target beside the figure it applies to.

import Histogram

struct ClusterRow {
    enum Section: String, CaseIterable {
        case latency = "Remote call latency (one call at a time)"
        case throughput = "Remote call throughput"
        case detection = "Failure detection (separate processes)"
        case membership = "Membership (separate processes)"
    }

    enum Target {
        /// p50 at most `factor` × the p50 of the named row.
        case latencyWithin(Double, of: String)
        case rateAtLeast(Double)
        /// p50 at most this long.
        case p50AtMost(Duration)
        /// The slowest trial at most this long.
        case maxAtMost(Duration)
        case countAtMost(Int)
    }

    let section: Section
    let name: String
    let note: String
    var latency: (count: UInt64, p50: UInt64, p99: UInt64, max: UInt64)?
    var rate: Double?
    var count: Int?
    var allocationsPerOperation: Double?
    var target: Target?

    init(section: Section, name: String, note: String, histogram: Histogram<UInt64>? = nil) {
        self.section = section
        self.name = name
        self.note = note
        if let histogram {
            latency = (
                histogram.totalCount, histogram.valueAtPercentile(50), histogram.valueAtPercentile(99), histogram.max
            )
        }
    }
}

/// `duration` in whole nanoseconds (targets are positive).
func nanoseconds(_ duration: Duration) -> UInt64 {
    UInt64(duration.components.seconds) * 1_000_000_000 + UInt64(duration.components.attoseconds / 1_000_000_000)
}

func formatNanoseconds(_ ns: UInt64) -> String {
    if ns >= 1_000_000_000 { return String(format: "%.2f s", Double(ns) / 1e9) }
    if ns >= 1_000_000 { return String(format: "%.2f ms", Double(ns) / 1e6) }
    return String(format: "%.1f µs", Double(ns) / 1e3)
}

/// Prints the table; returns whether every target was met.
func printClusterReport(_ rows: [ClusterRow]) -> Bool {
    var allMet = true
    for section in ClusterRow.Section.allCases {
        let inSection = rows.filter { $0.section == section }
        guard !inSection.isEmpty else { continue }
        print("\n## \(section.rawValue)\n")
        print("| Row | n | p50 | p99 | max | rate | allocs/op | target | |")
        print("|---|---|---|---|---|---|---|---|---|")
        for row in inSection {
            var cells = [row.name]
            if let latency = row.latency {
                cells += [
                    grouped(Int(latency.count)), formatNanoseconds(latency.p50), formatNanoseconds(latency.p99),
                    formatNanoseconds(latency.max),
                ]
            } else if let count = row.count {
                cells += [grouped(count), "", "", ""]
            } else {
                cells += ["", "", "", ""]
            }
            cells.append(row.rate.map { "\(grouped(Int($0))) calls/s" } ?? "")
            cells.append(row.allocationsPerOperation.map { String(format: "%.1f", $0) } ?? "")
            var verdict = ""
            switch row.target {
            case .latencyWithin(let factor, let baseline)?:
                if let base = rows.first(where: { $0.name == baseline })?.latency, let mine = row.latency {
                    let ratio = Double(mine.p50) / Double(base.p50)
                    cells.append(String(format: "p50 ≤ %.1f× raw NIO (awaited)", factor))
                    verdict = String(format: "%.2f× %@", ratio, ratio <= factor ? "met" : "MISSED")
                    allMet = allMet && ratio <= factor
                } else {
                    cells.append("(baseline not run)")
                }
            case .rateAtLeast(let minimum)?:
                cells.append("≥ \(grouped(Int(minimum))) calls/s")
                let met = (row.rate ?? 0) >= minimum
                verdict = met ? "met" : "MISSED"
                allMet = allMet && met
            case .p50AtMost(let limit)?:
                cells.append("p50 ≤ \(limit)")
                let limitNs = nanoseconds(limit)
                let met = (row.latency?.p50 ?? .max) <= limitNs
                verdict = met ? "met" : "MISSED"
                allMet = allMet && met
            case .maxAtMost(let limit)?:
                cells.append("max ≤ \(limit)")
                let limitNs = nanoseconds(limit)
                let met = (row.latency?.max ?? .max) <= limitNs
                verdict = met ? "met" : "MISSED"
                allMet = allMet && met
            case .countAtMost(let limit)?:
                cells.append("≤ \(limit)")
                let met = (row.count ?? .max) <= limit
                verdict = met ? "met" : "MISSED"
                allMet = allMet && met
            case nil:
                cells.append("")
            }
            cells.append(verdict)
            print("| " + cells.joined(separator: " | ") + " |")
            if !row.note.isEmpty { print("|  ↳ \(row.note) | | | | | | | | |") }
        }
    }
    return allMet
}

func clusterProgress(_ text: String) {
    printError("  running cluster: \(text)")
}
