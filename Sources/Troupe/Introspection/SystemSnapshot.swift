/// What ``ActorSystem/snapshot()`` returns: every live actor and job lane, every worker and the
/// system-wide latency histograms, read while the system runs (not a consistent cut: each value
/// is current when read). `description` renders it as a text report.
public struct SystemSnapshot: Sendable {
    /// ``ActorSystem/Configuration/name``.
    public let systemName: String
    /// Time since the system was created.
    public let uptime: Duration
    /// Live actors, most recently spawned first; from ``ActorSystem/snapshot(topActors:by:matching:)``,
    /// only the top ones, in its ranking's order.
    public let actors: [ActorSnapshot]
    /// Actors live when the snapshot was taken (``actors`` may hold fewer).
    public let liveActorCount: Int
    /// Actors that matched the search of ``ActorSystem/snapshot(topActors:by:matching:)``
    /// (from ``ActorSystem/snapshot()``, all of them: `actors.count`).
    public let matchingActorCount: Int
    /// The Swift executors' job lanes that exist.
    public let jobLanes: [JobLaneSnapshot]
    /// Shared workers first, then dedicated threads.
    public let workers: [WorkerSnapshot]
    /// Handlers started on threads that are not workers: turns that `runningTurnsHere` ran on
    /// the thread that opened the scope (TroupeCluster's network threads, an HTTP server's event
    /// loop), counted when each scope ends. ``handlersStarted`` adds the workers' own.
    public let handlersStartedOffWorkers: UInt64
    /// Sampled time in mailbox over every actor (see ``ActorSystem/Introspection``).
    public let timeInMailbox: LatencyHistogram
    /// Sampled handler durations over every actor.
    public let handlerDuration: LatencyHistogram
    /// The sampling interval in effect for this process (0: none).
    public let samplingInterval: Int
    /// Handlers running past the watchdog's threshold now.
    public let stuckHandlers: Int
    /// Dead letters so far.
    public let deadLetters: Int
    /// Whether shutdown had begun.
    public let isShuttingDown: Bool
    /// What modules and the application add (``ActorSystem/provideSnapshotSection(key:_:)``):
    /// a journal's latencies and queue, for example.
    public let sections: [SnapshotSection]
}

extension SystemSnapshot {
    /// Handlers started so far on every thread: each worker's ``WorkerSnapshot/handlersStarted``
    /// and ``handlersStartedOffWorkers``. It only grows, so two snapshots give the system's rate
    /// of messages (TroupeObserver's messages per second), whichever threads ran them.
    public var handlersStarted: UInt64 {
        workers.reduce(handlersStartedOffWorkers) { $0 &+ $1.handlersStarted }
    }
}

extension SystemSnapshot: CustomStringConvertible {
    /// A text report: one line per worker, then one per actor (busiest first), then the
    /// histograms.
    public var description: String {
        var lines: [String] = []
        lines.append(
            "system \(systemName): up \(LatencyHistogram.format(uptime)), \(liveActorCount) actors, \(jobLanes.count) job lanes, \(workers.count) workers, \(deadLetters) dead letters, \(stuckHandlers) stuck handlers\(isShuttingDown ? ", shutting down" : "")"
        )
        for worker in workers {
            let kind = worker.isDedicated ? "dedicated" : "worker"
            if let running = worker.running {
                let time = running.handlerRunningFor.map { " for \(LatencyHistogram.format($0))" } ?? ""
                lines.append("  \(kind) \(worker.index): running \(running.actor) (\(running.messageType))\(time)")
            } else {
                lines.append("  \(kind) \(worker.index): idle")
            }
        }
        for actor in actors.sorted(by: { $0.messagesProcessed > $1.messagesProcessed }) {
            var line =
                "  \(actor.address) \(actor.definitionType): \(actor.state.rawValue), \(actor.messagesProcessed) processed"
            if let depth = actor.mailboxDepth {
                line += ", \(depth) queued"
            } else if actor.hasPendingMessages {
                line += ", messages queued"
            }
            if actor.failures > 0 { line += ", \(actor.failures) failures" }
            if actor.restarts > 0 { line += ", \(actor.restarts) restarts" }
            if let handler = actor.handlerDuration { line += "; handler \(handler)" }
            lines.append(line)
        }
        for lane in jobLanes {
            let kind: String =
                switch lane.executor {
                case .serial: "serial executor"
                case .task(let worker): "task executor lane \(worker)"
                }
            lines.append("  \(lane.address) \(kind): \(lane.state.rawValue), \(lane.jobsRun) jobs")
        }
        lines.append("  time in mailbox: \(timeInMailbox)")
        lines.append("  handler duration: \(handlerDuration)")
        for section in sections {
            lines.append(contentsOf: section.description.split(separator: "\n").map { "  \($0)" })
        }
        return lines.joined(separator: "\n")
    }
}
