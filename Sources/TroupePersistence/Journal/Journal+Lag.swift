import Troupe
internal import TroupeLocks

/// How far the journals of one actor system are behind its durable actors, over all of them:
/// what a cluster's view shows for each node (TroupeClusterEntities' `nodes` table).
public struct JournalLag: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The journals in use in the system.
    public var journals: Int
    /// Operations waiting for their journal's next batch now, over every journal.
    public var queuedOperations: Int
    /// Operations the journals committed or refused so far.
    public var operations: Int
    /// The slowest journal's write latency at the 99th percentile since it started (from
    /// submitting a write to its outcome); nil before the first write.
    public var writeLatencyP99: Duration?

    public init(journals: Int, queuedOperations: Int, operations: Int, writeLatencyP99: Duration?) {
        self.journals = journals
        self.queuedOperations = queuedOperations
        self.operations = operations
        self.writeLatencyP99 = writeLatencyP99
    }

    /// "2 journals: 0 queued, 8 operations, write p99 412 µs" (the p99 as
    /// `LatencyHistogram.format(_:)` prints it).
    public var description: String {
        "\(journals) journal\(journals == 1 ? "" : "s"): \(queuedOperations) queued, \(operations) operations, "
            + "write p99 \(writeLatencyP99.map(LatencyHistogram.format) ?? "none yet")"
    }
}

extension Journal {
    /// The journals in use in `system`: each appears there at its first durable spawn in the
    /// system, and is listed for as long as it exists.
    public static func journals(in system: ActorSystem) -> [Journal] {
        let live = liveJournals.withLock { journals in
            journals.removeAll { $0.journal == nil }
            return journals.compactMap(\.journal)
        }
        return live.filter { journal in journal.shownIn.withLock { $0.contains { $0.system === system } } }
    }

    /// What the journals in use in `system` hold back now; nil when it uses none. Copies
    /// counters only (one lock per journal, and its latency histogram).
    public static func lag(in system: ActorSystem) -> JournalLag? {
        let journals = journals(in: system)
        guard !journals.isEmpty else { return nil }
        var lag = JournalLag(journals: journals.count, queuedOperations: 0, operations: 0, writeLatencyP99: nil)
        for journal in journals {
            let statistics = journal.statistics
            lag.queuedOperations += statistics.queuedOperations
            lag.operations += statistics.operations
            if statistics.writeLatency.count > 0 {
                let p99 = statistics.writeLatency.percentile(0.99)
                lag.writeLatencyP99 = max(lag.writeLatencyP99 ?? p99, p99)
            }
        }
        return lag
    }

    /// Lists `journal` among the live ones (at its first appearance in a system).
    static func registerLive(_ journal: Journal) {
        liveJournals.withLock { journals in
            journals.removeAll { $0.journal == nil }
            journals.append(WeakJournal(journal: journal))
        }
    }
}

private struct WeakJournal {
    weak var journal: Journal?
}

/// Every journal that has appeared in a system and still exists, weakly.
private let liveJournals = Locked<[WeakJournal]>([])
