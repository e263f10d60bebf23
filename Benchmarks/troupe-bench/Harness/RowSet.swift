// The scaffolding every workload shares: measure a row (sizes, warm-up, best of the runs:
// `benchmark`), check what it computed, and turn its measured window into a `Measurement`.

/// One row being measured: which workload on which system, for its checks and its result.
struct Row: Sendable {
    let workload: Workload
    let system: String

    /// Aborts the run unless `actual == expected`: a fast wrong answer is no measurement.
    func expect<T: Equatable>(_ actual: T, _ expected: T, _ what: String = "result") {
        verifyEqual(actual, expected, workload, system, what)
    }

    /// The row's result: `units` of work (see `Workload.unit`) done in `window`; latency rows
    /// add their percentiles.
    func measurement(_ window: Window, units: Int, note: String, latency: LatencySummary? = nil) -> Measurement {
        Measurement(
            workload: workload, system: system, messages: units, seconds: window.seconds,
            allocations: window.allocations, note: note, latency: latency)
    }
}

/// The rows of one workload, in report order.
struct RowSet {
    let config: BenchConfig
    let workload: Workload
    private(set) var measured: [Measurement] = []

    init(_ config: BenchConfig, _ workload: Workload) {
        self.config = config
        self.workload = workload
    }

    /// Measures `system`'s row unless `--filter` leaves it out: `run(n, row)` runs the workload
    /// once at size n and returns its measurement (`benchmark` picks n and keeps the best run;
    /// `divisor` shrinks the full size for slow forms).
    mutating func measure(
        _ system: String, family: SizeFamily, divisor: Int = 1, _ run: (_ n: Int, _ row: Row) -> Measurement
    ) {
        let row = Row(workload: workload, system: system)
        if let m = benchmark(config, workload, system: system, family: family, divisor: divisor, { run($0, row) }) {
            measured.append(m)
        }
    }

    /// Adds a row measured by a helper of another shape (idle CPU, memory per actor).
    mutating func append(_ measurement: Measurement?) {
        if let measurement { measured.append(measurement) }
    }
}
