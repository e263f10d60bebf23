/// A part of ``SystemSnapshot`` that a module or an application provides: named values and
/// latency histograms, under a title (a journal's write latencies and queue, a connection
/// pool's round trips). Provide one with ``ActorSystem/provideSnapshotSection(key:_:)``;
/// ``SystemSnapshot/sections`` holds them and its text report prints them after the system's
/// own histograms. TroupeMetrics exports them too.
public struct SnapshotSection: Sendable, Hashable {
    /// A counter or a gauge.
    public struct Value: Sendable, Hashable {
        /// A short name in snake case (`queued_operations`): metrics exporters use it as it is.
        public var name: String
        public var value: Int
        public init(_ name: String, _ value: Int) { (self.name, self.value) = (name, value) }
    }

    /// A latency histogram.
    public struct Histogram: Sendable, Hashable {
        /// A short name in snake case (`write_latency`).
        public var name: String
        public var histogram: LatencyHistogram
        public init(_ name: String, _ histogram: LatencyHistogram) { (self.name, self.histogram) = (name, histogram) }
    }

    /// Rows of text under named columns (a cluster's members, say): for people's views (the text
    /// report, TroupeObserver's page); metrics exporters leave tables out. A column whose name
    /// ends in `_total` holds a counter, and a live view may show its rate; a column named
    /// `actor` or `actors` holds actors' addresses as shown (`name#ID`, separated by spaces),
    /// which a live view may link to those actors.
    public struct Table: Sendable, Hashable {
        /// A short name in snake case (`members`).
        public var name: String
        public var columns: [String]
        /// One array of cells per row, in the order of ``columns``.
        public var rows: [[String]]
        public init(_ name: String, columns: [String], rows: [[String]]) {
            (self.name, self.columns, self.rows) = (name, columns, rows)
        }
    }
    /// What the section is about, in snake case (`journal`): metrics exporters prefix names with
    /// it.
    public var kind: String
    /// Which one (`SQLiteStore orders.sqlite`), when a system has several of a kind.
    public var instance: String
    public var values: [Value]
    public var histograms: [Histogram]
    public var tables: [Table]

    public init(kind: String, instance: String = "", values: [Value] = [], histograms: [Histogram] = []) {
        self.init(kind: kind, instance: instance, values: values, histograms: histograms, tables: [])
    }

    /// A section with tables (the initialiser without `tables` makes one with none).
    public init(
        kind: String, instance: String = "", values: [Value] = [], histograms: [Histogram] = [], tables: [Table]
    ) {
        self.kind = kind
        self.instance = instance
        self.values = values
        self.histograms = histograms
        self.tables = tables
    }
}

extension SnapshotSection: CustomStringConvertible {
    /// `journal SQLiteStore: batches 12, …` then one line per histogram, then each table (its
    /// columns, then one line per row).
    public var description: String {
        let title = instance.isEmpty ? kind : "\(kind) \(instance)"
        var lines = [title + ": " + values.map { "\($0.name) \($0.value)" }.joined(separator: ", ")]
        for histogram in histograms { lines.append("  \(histogram.name): \(histogram.histogram)") }
        for table in tables {
            lines.append("  \(table.name): " + table.columns.joined(separator: " | "))
            for row in table.rows { lines.append("    " + row.joined(separator: " | ")) }
        }
        return lines.joined(separator: "\n")
    }
}

extension ActorSystem {
    /// Adds what `provider` returns to every ``snapshot()`` from now on, until it returns nil
    /// (its source has gone: capture it weakly). A provider given again
    /// under an equal `key` replaces the earlier one, so a module may call this each time it
    /// starts using a system. `provider` runs on the thread that takes the snapshot, without
    /// locks held: keep it to copying counters.
    public func provideSnapshotSection(
        key: some Hashable & Sendable, _ provider: @escaping @Sendable () -> SnapshotSection?
    ) {
        introspector.provideSection(key: AnyHashable(key), provider)
    }

    /// The sections providers give now, dropping the providers that answer nil.
    func snapshotSections() -> [SnapshotSection] {
        var sections: [SnapshotSection] = []
        var gone: [AnyHashable] = []
        for (key, provider) in introspector.sectionProviders {
            if let section = provider() { sections.append(section) } else { gone.append(key) }
        }
        introspector.dropSections(gone)
        return sections
    }
}
