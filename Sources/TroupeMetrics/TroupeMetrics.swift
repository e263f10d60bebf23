internal import TroupeLocks
import CoreMetrics
import Synchronization
import Troupe

/// Reports an `ActorSystem`'s runtime events and gauges to swift-metrics.
///
/// ```swift
/// let system = ActorSystem(configuration: .init(name: "orders"))
/// let metrics = TroupeMetrics(system: system)   // the bootstrapped MetricsSystem factory
/// ...
/// await system.shutdown()                       // reporting ends with the system
/// ```
///
/// Every metric carries the dimension `system` (the configuration's name), and those about one
/// actor also `actor` when the actor has a name (`SpawnOptions.name`; unnamed actors
/// are counted without it, so that the number of series stays bounded):
///
/// | Metric | Kind | Dimensions | Source |
/// |---|---|---|---|
/// | `troupe_actors_started_total` | counter | actor | `SystemHooks.onActorStarted(_:)` |
/// | `troupe_actors_stopped_total` | counter | actor | `SystemHooks.onActorStopped(_:)` |
/// | `troupe_actor_failures_total` | counter | actor, directive | `SystemHooks.onActorFailed(_:)` |
/// | `troupe_actor_restarts_total` | counter | actor | `SystemHooks.onActorRestarted(_:)` |
/// | `troupe_dead_letters_total` | counter | reason | `DeadLetterOffice` counts, polled |
/// | `troupe_live_actors` | gauge | | polled |
/// | `troupe_busy_workers` | gauge | | polled |
/// | `troupe_stuck_handlers` | gauge | | polled, and at each watchdog report |
/// | `troupe_mailbox_depth` | gauge | actor | polled, named actors whose mailbox counts its depth |
/// | `troupe_time_in_mailbox` | timer | actor | sampled messages (`SystemHooks.onMessageTimed(_:)`) |
/// | `troupe_handler_duration` | timer | actor | sampled messages |
/// | `troupe_<kind>_<name>` | gauge | instance | polled: a value of a `SnapshotSection` |
/// | `troupe_<kind>_<name>_seconds` | gauges | instance, quantile | polled: a histogram of a `SnapshotSection` |
///
/// Sections are what other modules add to `ActorSystem.snapshot()`: TroupePersistence's
/// `Journal` adds kind `journal` (`troupe_journal_queued_operations`,
/// `troupe_journal_write_latency_seconds{quantile="0.99"}`, …). A histogram is reported as a
/// summary: gauges for the quantiles 0.5, 0.9, 0.99 and 1 (the maximum) since the journal
/// began, plus `…_seconds_count` and `…_seconds_sum`.
///
/// Counters and timers are recorded on the thread where the event happens (a worker); gauges and
/// dead-letter counts are polled every `pollInterval` on a task of their own (a last time when
/// the system has begun shutting down). Metric objects are
/// made once per series and cached, so an event costs one dictionary lookup under a lock and the
/// backend's own recording.
public final class TroupeMetrics: Sendable {
    /// Metric names (Prometheus style).
    public enum Name {
        public static let actorsStarted = "troupe_actors_started_total"
        public static let actorsStopped = "troupe_actors_stopped_total"
        public static let actorFailures = "troupe_actor_failures_total"
        public static let actorRestarts = "troupe_actor_restarts_total"
        public static let deadLetters = "troupe_dead_letters_total"
        public static let liveActors = "troupe_live_actors"
        public static let busyWorkers = "troupe_busy_workers"
        public static let stuckHandlers = "troupe_stuck_handlers"
        public static let mailboxDepth = "troupe_mailbox_depth"
        public static let timeInMailbox = "troupe_time_in_mailbox"
        public static let handlerDuration = "troupe_handler_duration"
    }

    private let series: MetricSeries
    private let observations: [Observation]
    private let poller = Mutex<Task<Void, Never>?>(nil)

    /// Starts reporting. `factory`: the swift-metrics backend (by default the one
    /// `MetricsSystem.bootstrap` installed). `dimensions` are added to every metric (a host, a
    /// region). Gauges and dead-letter counts are read every `pollInterval` (at least 10 ms).
    /// Reporting ends when the system has shut down, or at ``stop()``.
    public init(
        system: ActorSystem,
        dimensions: [(String, String)] = [],
        pollInterval: Duration = .seconds(1),
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        let series = MetricSeries(
            factory: factory, dimensions: [("system", system.configuration.name)] + dimensions)
        self.series = series
        let hooks = system.hooks
        observations = [
            hooks.onActorStarted { series.counter(Name.actorsStarted, actor: $0).increment() },
            hooks.onActorStopped { series.counter(Name.actorsStopped, actor: $0).increment() },
            hooks.onActorFailed { failure, directive in
                series.counter(Name.actorFailures, actor: failure.actor, extra: ("directive", "\(directive.action)"))
                    .increment()
            },
            hooks.onActorRestarted { address, _ in series.counter(Name.actorRestarts, actor: address).increment() },
            hooks.onMessageTimed { timing in
                series.timer(Name.timeInMailbox, actor: timing.actor).recordNanoseconds(
                    timing.timeInMailbox.wholeNanoseconds)
                series.timer(Name.handlerDuration, actor: timing.actor).recordNanoseconds(
                    timing.handlerDuration.wholeNanoseconds)
            },
            hooks.onStuckHandler { [weak system] _ in
                if let system { series.gauge(Name.stuckHandlers).record(system.stuckHandlerCount) }
            },
        ]
        let interval = max(pollInterval, .milliseconds(10))
        // The system weakly: reporting must not keep it alive.
        poller.withLock {
            $0 = Task.detached { [weak system] in
                while !Task.isCancelled {
                    guard let system else { return }
                    series.poll(system)
                    if system.isShuttingDown { return }
                    try? await Task.sleep(for: interval)
                }
            }
        }
    }

    /// Reads the gauges and dead-letter counts now (the poller does it every `pollInterval`).
    public func poll(_ system: ActorSystem) { series.poll(system) }

    /// Stops reporting: removes the hooks and ends the poller. Idempotent. Without it,
    /// reporting lasts as long as the system, whether or not this object is kept.
    public func stop() {
        for observation in observations { observation.cancel() }
        poller.withLock {
            $0?.cancel()
            $0 = nil
        }
    }
}

/// The metric objects of one ``TroupeMetrics``, made on first use per series and cached.
///
/// Thread-safety: the caches are locked; metric objects are Sendable and record from any
/// thread; `reportedDeadLetters` is only touched under its lock by `poll`.
final class MetricSeries: Sendable {
    let factory: any MetricsFactory
    let dimensions: [(String, String)]
    private let counters = Locked<[SeriesKey: Counter]>([:])
    private let timers = Locked<[SeriesKey: CoreMetrics.Timer]>([:])
    private let gauges = Locked<[SeriesKey: Gauge]>([:])
    /// Dead letters already reported, by reason.
    private let reportedDeadLetters = Locked<[DeadLetterReason.Kind: Int]>([:])
    /// Named actors whose depth gauge was set, so that a stopped actor's gauge drops to 0.
    private let depthGauges = Locked<Set<String>>([])

    struct SeriesKey: Hashable {
        let label: String
        let actor: String?
        let extra: String?
    }

    init(factory: any MetricsFactory, dimensions: [(String, String)]) {
        self.factory = factory
        self.dimensions = dimensions
    }

    private func dimensions(actor: String?, extra: (String, String)?) -> [(String, String)] {
        var all = dimensions
        if let actor { all.append(("actor", actor)) }
        if let extra { all.append(extra) }
        return all
    }

    func counter(_ label: String, actor address: ActorAddress? = nil, extra: (String, String)? = nil) -> Counter {
        let key = SeriesKey(label: label, actor: address?.name, extra: extra.map { "\($0.0)=\($0.1)" })
        return counters.withLock { cache in
            if let made = cache[key] { return made }
            let made = Counter(
                label: label, dimensions: dimensions(actor: key.actor, extra: extra), factory: factory)
            cache[key] = made
            return made
        }
    }

    func timer(_ label: String, actor address: ActorAddress) -> CoreMetrics.Timer {
        let key = SeriesKey(label: label, actor: address.name, extra: nil)
        return timers.withLock { cache in
            if let made = cache[key] { return made }
            let made = CoreMetrics.Timer(
                label: label, dimensions: dimensions(actor: key.actor, extra: nil), factory: factory)
            cache[key] = made
            return made
        }
    }

    func gauge(_ label: String, actor: String? = nil, extra: [(String, String)] = []) -> Gauge {
        let key = SeriesKey(
            label: label, actor: actor,
            extra: extra.isEmpty ? nil : extra.map { "\($0.0)=\($0.1)" }.joined(separator: ","))
        return gauges.withLock { cache in
            if let made = cache[key] { return made }
            let made = Gauge(
                label: label, dimensions: dimensions(actor: actor, extra: nil) + extra, factory: factory)
            cache[key] = made
            return made
        }
    }

    /// Reads the gauges and reports new dead letters.
    func poll(_ system: ActorSystem) {
        gauge(TroupeMetrics.Name.liveActors).record(system.liveActorCount)
        gauge(TroupeMetrics.Name.busyWorkers).record(system.busyWorkerCount)
        gauge(TroupeMetrics.Name.stuckHandlers).record(system.stuckHandlerCount)
        let office = system.deadLetters
        // The counters are incremented under the same lock as the counts are taken: a poll that
        // took the counts and had not yet reported them let a concurrent poll (the periodic
        // task's and a caller's) see nothing new, and report a series that did not exist yet as
        // missing (TroupeMetricsTests, CI's ASan stage, 2026-11-27). Lock order: this one, then
        // the counters' cache.
        reportedDeadLetters.withLock { reported in
            for kind in DeadLetterReason.Kind.allCases {
                let now = office.count(kind)
                let delta = now - reported[kind, default: 0]
                reported[kind] = now
                if delta > 0 {
                    counter(TroupeMetrics.Name.deadLetters, extra: ("reason", "\(kind)")).increment(by: delta)
                }
            }
        }
        let snapshot = system.snapshot()
        report(snapshot.sections)
        // Depths: named actors whose mailbox counts them (one snapshot per poll).
        var depths: [String: Int] = [:]
        for actor in snapshot.actors {
            if let name = actor.name, let depth = actor.mailboxDepth { depths[name, default: 0] += depth }
        }
        let gone = depthGauges.withLock { seen in
            let gone = seen.subtracting(depths.keys)
            seen = Set(depths.keys)
            return gone
        }
        for (name, depth) in depths { gauge(TroupeMetrics.Name.mailboxDepth, actor: name).record(depth) }
        for name in gone { gauge(TroupeMetrics.Name.mailboxDepth, actor: name).record(0) }
    }
}

extension MetricSeries {
    /// Sections other modules put in the snapshot (a journal's, for one): each value as a gauge
    /// `troupe_<kind>_<name>`, each histogram as a summary in seconds (gauges
    /// `troupe_<kind>_<name>_seconds` with `quantile` 0.5, 0.9, 0.99 and 1 — the maximum — and
    /// `…_seconds_count`, `…_seconds_sum`), all with the dimension `instance`.
    func report(_ sections: [SnapshotSection]) {
        for section in sections {
            let instance = [("instance", section.instance)]
            for value in section.values {
                gauge("troupe_\(section.kind)_\(value.name)", extra: instance).record(value.value)
            }
            for named in section.histograms {
                let label = "troupe_\(section.kind)_\(named.name)_seconds"
                let histogram = named.histogram
                for (quantile, fraction) in [("0.5", 0.5), ("0.9", 0.9), ("0.99", 0.99)] {
                    gauge(label, extra: instance + [("quantile", quantile)]).record(
                        histogram.percentile(fraction).seconds)
                }
                gauge(label, extra: instance + [("quantile", "1")]).record(histogram.maximum.seconds)
                gauge(label + "_count", extra: instance).record(Int(clamping: histogram.count))
                gauge(label + "_sum", extra: instance).record(Double(histogram.totalNanoseconds) / 1e9)
            }
        }
    }
}

extension Duration {
    /// In seconds, as a Double.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole nanoseconds, saturating.
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (fromSeconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = fromSeconds.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowAgain ? (seconds < 0 ? .min : .max) : total
    }
}
