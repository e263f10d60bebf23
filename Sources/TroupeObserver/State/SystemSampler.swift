import Troupe

/// Reads the system for the observer: one snapshot per sample, shared by every page that is
/// sent a document from it, and the rates since the previous sample. Samples are taken only
/// when a page or a request asks (``LiveHub`` ticks only while a page is connected), so an
/// observer that nobody watches reads nothing.
///
/// Thread-safety: used on the observer's event loop only (held in a `NIOLoopBound`).
final class SystemSampler {
    /// One reading of the system.
    struct Sample {
        let snapshot: SystemSnapshot
        let deadLetters: [(String, Int)]
        /// Handlers started so far, on the workers and off them (a monotonic count, unlike the
        /// live actors' counters, which leave with the actors).
        let handlersStarted: UInt64
        /// Handlers started per second since the previous sample; nil for the first.
        let messagesPerSecond: Double?
        /// The p99 of the messages sampled since the previous sample (time in mailbox, handler
        /// duration), in microseconds; nil when none was sampled meanwhile. The system's
        /// histograms count since its start: these are the live chart's.
        let recentP99: (timeInMailbox: Double, handlerDuration: Double, samples: UInt64)?
        let takenAt: ContinuousClock.Instant
    }

    let system: ActorSystem
    private var previous: (takenAt: ContinuousClock.Instant, handlersStarted: UInt64)?
    /// Messages processed by the actors shown in the previous sample's documents, for their
    /// rates: only shown rows are remembered, so the cost follows the rows on screen, not the
    /// actors in the system.
    private var shownBefore: [UInt64: UInt64] = [:]
    private var shownNow: [UInt64: UInt64] = [:]
    private var secondsSincePrevious: Double?
    private var previousBuckets: (timeInMailbox: [UInt64], handlerDuration: [UInt64])?

    /// The system's last failures a document carries, newest first (the page shows five, and a
    /// selected actor's among them).
    static let failuresShown = 20

    init(system: ActorSystem) { self.system = system }

    /// Reads the system now; the rates in documents rendered from it are measured since the
    /// previous call.
    func sample() -> Sample {
        let now = ContinuousClock.now
        // The system's part only: each page's actors come from a walk of their own.
        let snapshot = system.snapshot(topActors: 0, by: .messagesProcessed)
        let handlersStarted = snapshot.handlersStarted
        var rate: Double?
        secondsSincePrevious = nil
        if let previous {
            let seconds = Self.seconds(now - previous.takenAt)
            if seconds > 0 {
                secondsSincePrevious = seconds
                rate = Double(handlersStarted &- previous.handlersStarted) / seconds
            }
        }
        previous = (now, handlersStarted)
        shownBefore = shownNow
        shownNow = [:]
        let office = system.deadLetters
        let deadLetters = DeadLetterReason.Kind.allCases.map { ("\($0)", office.count($0)) }
        let buckets = (snapshot.timeInMailbox.bucketCounts, snapshot.handlerDuration.bucketCounts)
        var recent: (Double, Double, UInt64)?
        if let previousBuckets {
            let mailbox = Self.p99(since: previousBuckets.timeInMailbox, now: buckets.0)
            let handler = Self.p99(since: previousBuckets.handlerDuration, now: buckets.1)
            if let mailbox, let handler { recent = (mailbox.microseconds, handler.microseconds, mailbox.samples) }
        }
        previousBuckets = buckets
        return Sample(
            snapshot: snapshot, deadLetters: deadLetters, handlersStarted: handlersStarted, messagesPerSecond: rate,
            recentP99: recent, takenAt: now)
    }

    /// The document a page shows for `view`.
    func document(_ sample: Sample, view: ActorView) -> StateDocument {
        let snapshot = sample.snapshot
        var members: [StateDocument.Member] = []
        func member(_ name: String, _ write: (inout JSONText) -> Void) {
            var json = JSONText(capacity: 64)
            write(&json)
            members.append(StateDocument.Member(name: name, json: json.text))
        }
        member("name") { $0.value(snapshot.systemName) }
        member("actorCount") { $0.value(snapshot.liveActorCount) }
        member("jobLaneCount") { $0.value(snapshot.jobLanes.count) }
        member("handlersStarted") { $0.value(sample.handlersStarted) }
        member("messagesPerSecond") { json in
            if let rate = sample.messagesPerSecond { json.value(rate.rounded()) } else { json.null() }
        }
        member("busyWorkers") { $0.value(snapshot.workers.filter { $0.running != nil }.count) }
        member("stuckHandlers") { $0.value(snapshot.stuckHandlers) }
        member("shuttingDown") { $0.value(snapshot.isShuttingDown) }
        member("samplingInterval") { $0.value(snapshot.samplingInterval) }
        member("deadLetters") { json in
            json.object { json in
                json.member("total", snapshot.deadLetters)
                for (reason, count) in sample.deadLetters { json.member(reason, count) }
            }
        }
        member("workers") { json in
            json.array { json in
                for worker in snapshot.workers { Self.write(worker, into: &json) }
            }
        }
        member("recent") { json in
            if let recent = sample.recentP99 {
                json.object { json in
                    json.member("samples", recent.samples)
                    json.member("timeInMailboxP99Us", recent.timeInMailbox)
                    json.member("handlerDurationP99Us", recent.handlerDuration)
                }
            } else {
                json.null()
            }
        }
        member("recentFailures") { [system] json in
            json.array { json in
                for failure in system.recentFailures.suffix(Self.failuresShown).reversed() {
                    json.object { json in
                        json.member("id", failure.actor.id)
                        json.member("actor", failure.actor.description)
                        json.member("error", failure.error)
                        json.member("action", "\(failure.action)")
                        json.member("atSeconds", Self.seconds(failure.at))
                        json.member("failureCount", failure.failureCount)
                    }
                }
            }
        }
        member("timeInMailbox") { Self.write(snapshot.timeInMailbox, into: &$0) }
        member("handlerDuration") { Self.write(snapshot.handlerDuration, into: &$0) }
        member("sections") { json in
            json.array { json in
                for section in snapshot.sections { Self.write(section, into: &json) }
            }
        }
        let top = system.snapshot(topActors: view.limit, by: view.ranking, matching: view.query)
        var viewJSON = JSONText(capacity: 128)
        viewJSON.object { json in
            json.member("sort", view.sort.rawValue)
            json.member("q", view.query)
            json.member("limit", view.limit)
            json.member("matching", top.matchingActorCount)
        }
        let rows = top.actors.map { actor in
            var json = JSONText(capacity: 512)
            write(actor, into: &json)
            return StateDocument.Row(id: actor.address.id, json: json.text)
        }
        var lanes = JSONText()
        lanes.array { json in
            for lane in snapshot.jobLanes.prefix(ActorView.maximumLimit) { Self.write(lane, into: &json) }
        }
        return StateDocument(
            uptimeSeconds: Int(Self.seconds(snapshot.uptime)), system: members, view: viewJSON.text, actors: rows,
            jobLanes: lanes.text)
    }

    private func write(_ actor: ActorSnapshot, into json: inout JSONText) {
        let id = actor.address.id
        shownNow[id] = actor.messagesProcessed
        json.object { json in
            json.member("id", id)
            json.member("name", actor.name)
            json.member("address", actor.address.description)
            json.key("parent")
            if let parent = actor.parentID { json.value(parent) } else { json.null() }
            json.member("type", actor.definitionType)
            json.member("messageType", actor.messageType)
            json.member("state", actor.state.rawValue)
            json.member("depth", actor.mailboxDepth)
            json.member("pending", actor.hasPendingMessages)
            json.member("processed", actor.messagesProcessed)
            json.key("rate")
            if let before = shownBefore[id], let seconds = secondsSincePrevious, actor.messagesProcessed >= before {
                json.value((Double(actor.messagesProcessed - before) / seconds).rounded())
            } else {
                json.null()
            }
            json.member("failures", actor.failures)
            json.member("restarts", actor.restarts)
            json.member("restartable", actor.isRestartable)
            json.member("inspectable", actor.isInspectable)
            if let handler = actor.handlerDuration {
                json.key("handlerDuration")
                Self.write(handler, into: &json)
            }
        }
    }

    private static func write(_ worker: WorkerSnapshot, into json: inout JSONText) {
        json.object { json in
            json.member("index", worker.index)
            json.member("dedicated", worker.isDedicated)
            json.member("handlersStarted", worker.handlersStarted)
            json.member("running", worker.running?.actor.description)
            json.member("runningID", worker.running.map { Int($0.actor.id) })
            json.member("messageType", worker.running?.messageType)
            json.member("swiftJob", worker.running?.isSwiftJob ?? false)
            json.key("runningForMs")
            if let time = worker.running?.handlerRunningFor {
                json.value(Int(time.components.seconds * 1000 + time.components.attoseconds / 1_000_000_000_000_000))
            } else {
                json.null()
            }
        }
    }

    private static func write(_ histogram: LatencyHistogram, into json: inout JSONText) {
        json.object { json in
            json.member("count", histogram.count)
            guard histogram.count > 0 else { return }
            json.member("p50Us", microseconds(histogram.percentile(0.5)))
            json.member("p90Us", microseconds(histogram.percentile(0.9)))
            json.member("p99Us", microseconds(histogram.percentile(0.99)))
            json.member("maxUs", microseconds(histogram.maximum))
        }
    }

    private static func write(_ lane: JobLaneSnapshot, into json: inout JSONText) {
        json.object { json in
            json.member("address", lane.address.description)
            switch lane.executor {
            case .serial: json.member("executor", "serial")
            case .task(let worker): json.member("executor", "task lane \(worker)")
            }
            json.member("state", lane.state.rawValue)
            json.member("pending", lane.hasPendingJobs)
            json.member("jobsRun", lane.jobsRun)
        }
    }

    private static func write(_ section: SnapshotSection, into json: inout JSONText) {
        json.object { json in
            json.member("kind", section.kind)
            json.member("instance", section.instance)
            json.key("values")
            json.object { json in
                for value in section.values { json.member(value.name, value.value) }
            }
            json.key("histograms")
            json.object { json in
                for histogram in section.histograms {
                    json.key(histogram.name)
                    write(histogram.histogram, into: &json)
                }
            }
            json.key("tables")
            json.array { json in
                for table in section.tables {
                    json.object { json in
                        json.member("name", table.name)
                        json.key("columns")
                        json.array { json in for column in table.columns { json.value(column) } }
                        json.key("rows")
                        json.array { json in
                            for row in table.rows {
                                json.array { json in for cell in row { json.value(cell) } }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The p99 of the samples counted between two readings of a histogram's buckets (the
    /// middle of the bucket that holds it), in microseconds; nil when nothing was counted.
    static func p99(since before: [UInt64], now: [UInt64]) -> (microseconds: Double, samples: UInt64)? {
        guard before.count == now.count else { return nil }
        let counts = zip(now, before).map { $0 &- $1 }
        let samples = counts.reduce(0, &+)
        guard samples > 0 else { return nil }
        let rank = max(1, UInt64((0.99 * Double(samples)).rounded(.up)))
        var seen: UInt64 = 0
        for (index, count) in counts.enumerated() where count > 0 {
            seen &+= count
            guard seen >= rank else { continue }
            let lower = LatencyHistogram.lowerBound(ofBucket: index)
            let upper =
                index + 1 < LatencyHistogram.bucketCount ? LatencyHistogram.lowerBound(ofBucket: index + 1) : lower
            return (Double(lower + (upper - lower) / 2) / 1000, samples)
        }
        return nil
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private static func microseconds(_ duration: Duration) -> Double {
        seconds(duration) * 1e6
    }
}
