// The persistence rows' table: measured figures, each target beside the figure it applies to.

import Foundation

struct PersistenceRow {
    enum Target {
        /// The whole row within this time.
        case totalAtMost(Duration)
        /// At least this many events per second.
        case rateAtLeast(Double)
        /// p99 at most this long.
        case p99AtMost(Duration)
        /// At most `factor` × the named row's time per event (or at least 1/factor of its rate).
        case rateWithin(Double, of: String)
        /// No operation failed (or timed out).
        case noFailures
    }

    let name: String
    let note: String
    var events: Int
    var seconds: Double
    var p50: Duration?
    var p99: Duration?
    /// Operations that failed or timed out, where the row counts them.
    var failures: Int?
    var targets: [Target] = []

    var rate: Double { Double(events) / seconds }
}

private func format(_ duration: Duration) -> String {
    let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    if seconds >= 1 { return String(format: "%.2f s", seconds) }
    if seconds >= 1e-3 { return String(format: "%.2f ms", seconds * 1e3) }
    return String(format: "%.1f µs", seconds * 1e6)
}

/// Prints the table; returns whether every target was met.
func printPersistenceReport(_ rows: [PersistenceRow]) -> Bool {
    var allMet = true
    print("\n| Row | events | time | events/s | p50 ack | p99 ack | target | |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows {
        var verdicts: [(String, Bool)] = []
        for target in row.targets {
            switch target {
            case .totalAtMost(let limit):
                verdicts.append(("≤ \(format(limit))", .seconds(row.seconds) <= limit))
            case .rateAtLeast(let rate):
                verdicts.append(("≥ \(grouped(Int(rate)))/s", row.rate >= rate))
            case .p99AtMost(let limit):
                verdicts.append(("p99 ≤ \(format(limit))", (row.p99 ?? .seconds(1_000)) <= limit))
            case .noFailures:
                verdicts.append(("0 failed (\(row.failures ?? 0))", (row.failures ?? 0) == 0))
            case .rateWithin(let factor, let name):
                guard let other = rows.first(where: { $0.name == name }) else { continue }
                let ratio = other.rate / row.rate
                verdicts.append((String(format: "≤ %.1f× raw (%.2f×)", factor, ratio), ratio <= factor))
            }
        }
        let met = verdicts.allSatisfy(\.1)
        if !met { allMet = false }
        let cells = [
            row.name, grouped(row.events), format(.seconds(row.seconds)), grouped(Int(row.rate)),
            row.p50.map(format) ?? "", row.p99.map(format) ?? "", verdicts.map(\.0).joined(separator: ", "),
            verdicts.isEmpty ? "" : (met ? "met" : "MISSED"),
        ]
        print("| " + cells.joined(separator: " | ") + " |")
    }
    print("\nWhat each row measures:")
    for row in rows { print("- \(row.name): \(row.note)") }
    return allMet
}
