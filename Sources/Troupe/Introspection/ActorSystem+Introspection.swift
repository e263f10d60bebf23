import Logging
internal import CTroupe

extension ActorSystem {
    /// Everything live in the system, read without stopping it: actors (state, mailbox,
    /// counters, histograms), Swift executors' job lanes, what each worker runs and for how long,
    /// and the system's sampled histograms. O(live actors); meant for diagnostics (a debug
    /// endpoint, a test, a signal handler's dump), not for every message. Any thread.
    ///
    /// ```swift
    /// print(system.snapshot())   // a text report
    /// let busiest = system.snapshot().actors.max { $0.messagesProcessed < $1.messagesProcessed }
    /// ```
    public func snapshot() -> SystemSnapshot {
        let shared = scheduler.sharedWorkers
        let reads = shared.map { worker in
            // Safety: the scheduler (held by this system) holds its shared workers for its whole life.
            worker._withUnsafeGuaranteedRef {
                ($0.currentCell.load(ordering: .relaxed), $0.progress.handlersStarted)
            }
        }
        let dedicated = scheduler.dedicatedWorkers
        let dedicatedReads = dedicated.map {
            ($0.currentCell.load(ordering: .relaxed), $0.progress.handlersStarted)
        }
        let running = Set(reads.map(\.0) + dedicatedReads.map(\.0)).subtracting([0])
        // Strong references from here on: the cells named below cannot go while they are read.
        let cells = liveCells()
        let taskLanes = taskExecutorSlot.withLock { $0?.lanes } ?? []
        let serialLanes = introspector.liveSerialLanes
        var byAddress: [UInt: AnyCell] = [:]
        for cell in cells { byAddress[Self.identity(of: cell)] = cell }
        for lane in taskLanes { byAddress[Self.identity(of: lane)] = lane }
        for lane in serialLanes { byAddress[Self.identity(of: lane)] = lane }

        let actors = cells.map { cell in
            let histograms = cell.ownHistograms
            return ActorSnapshot(
                address: cell.address, definitionType: cell.definitionTypeName, messageType: cell.messageTypeName,
                state: cell.observedState(running: running.contains(Self.identity(of: cell))),
                mailboxDepth: cell.observedMailboxDepth, hasPendingMessages: cell.observedHasPendingMessages,
                messagesProcessed: cell.messagesProcessed,
                failures: Int(cell.failureTotal.load(ordering: .relaxed)),
                restarts: Int(cell.restartTotal.load(ordering: .relaxed)),
                timeInMailbox: histograms.map { LatencyHistogram(copying: $0.timeInMailbox) },
                handlerDuration: histograms.map { LatencyHistogram(copying: $0.handlerDuration) })
        }
        let lanes =
            taskLanes.enumerated().map { index, lane in
                Self.laneSnapshot(lane, executor: .task(worker: index), running: running)
            } + serialLanes.map { Self.laneSnapshot($0, executor: .serial, running: running) }

        var workers: [WorkerSnapshot] = []
        for (index, read) in reads.enumerated() {
            let current = read.0 == 0 ? nil : byAddress[read.0]
            workers.append(
                WorkerSnapshot(
                    index: index, isDedicated: false,
                    running: current.map { cell in
                        WorkerSnapshot.Running(
                            actor: cell.address, isSwiftJob: cell.isJobLane, messageType: cell.messageTypeName,
                            handlerRunningFor: introspector.watchdog?.runningTime(
                                worker: index, cell: read.0, progress: read.1))
                    }, handlersStarted: UInt64(read.1)))
        }
        for (offset, read) in dedicatedReads.enumerated() {
            let current = read.0 == 0 ? nil : byAddress[read.0]
            workers.append(
                WorkerSnapshot(
                    index: shared.count + offset, isDedicated: true,
                    running: current.map {
                        WorkerSnapshot.Running(
                            actor: $0.address, isSwiftJob: false, messageType: $0.messageTypeName,
                            handlerRunningFor: nil)
                    }, handlersStarted: UInt64(read.1)))
        }
        return SystemSnapshot(
            systemName: configuration.name,
            uptime: .nanoseconds(CTroupe_monotonic_ns() - introspector.createdAt),
            actors: actors, jobLanes: lanes, workers: workers,
            timeInMailbox: LatencyHistogram(copying: introspector.timeInMailbox),
            handlerDuration: LatencyHistogram(copying: introspector.handlerDuration),
            samplingInterval: Int(CTroupe_sampling_interval()),
            stuckHandlers: stuckHandlerCount, deadLetters: deadLetters.total, isShuttingDown: isShuttingDown,
            sections: snapshotSections())
    }

    /// Handlers running past the watchdog's threshold now (0 when the watchdog is off).
    public var stuckHandlerCount: Int { introspector.watchdog?.count.load(ordering: .relaxed) ?? 0 }

    /// Shared workers running a turn now (a racy observation, for gauges). Any thread.
    public var busyWorkerCount: Int {
        scheduler.sharedWorkers.reduce(0) { busy, worker in
            // Safety: the scheduler (held by this system) holds its shared workers for its whole life.
            busy + (worker._withUnsafeGuaranteedRef { $0.currentCell.load(ordering: .relaxed) } == 0 ? 0 : 1)
        }
    }

    /// The system-wide sampled histograms, without the rest of a snapshot (cheap: two copies of
    /// 152 counters). Any thread.
    public var latencyHistograms: (timeInMailbox: LatencyHistogram, handlerDuration: LatencyHistogram) {
        (LatencyHistogram(copying: introspector.timeInMailbox), LatencyHistogram(copying: introspector.handlerDuration))
    }

    static func identity(of cell: AnyCell) -> UInt {
        // Safety: identity only: the address is compared, never dereferenced.
        UInt(bitPattern: Unmanaged.passUnretained(cell).toOpaque())
    }

    private static func laneSnapshot(
        _ lane: JobLane, executor: JobLaneSnapshot.Executor, running: Set<UInt>
    ) -> JobLaneSnapshot {
        let isRunning = running.contains(identity(of: lane))
        return JobLaneSnapshot(
            address: lane.address, executor: executor,
            state: isRunning ? .running : CTroupe_mailbox_is_scheduled(lane.mailbox) ? .scheduled : .idle,
            hasPendingJobs: lane.observedHasPendingMessages, jobsRun: UInt64(lane.jobsRun))
    }

    /// Names the cell at `address` (a worker's ``Worker/currentCell``) if the system still holds
    /// it: a live actor, or a job lane. Never dereferences `address` itself. Any thread.
    func describeRunningCell(_ address: UInt) -> (address: ActorAddress, messageType: String, isSwiftJob: Bool)? {
        if let found = findLiveCell(address) { return found }
        let lanes = (taskExecutorSlot.withLock { $0?.lanes } ?? []) + introspector.liveSerialLanes
        guard let lane = lanes.first(where: { Self.identity(of: $0) == address }) else { return nil }
        return (lane.address, lane.messageTypeName, true)
    }

    /// The watchdog found a handler past its threshold. On the timer thread.
    func stuckHandlerFound(_ report: StuckHandler) {
        logger.warning("handler running longer than the stuck-handler threshold", metadata: report.logMetadata)
        hooks.stuckHandler(report)
    }

    /// A handler reported as stuck has ended. On the timer thread.
    func stuckHandlerFinished(_ report: StuckHandler) {
        logger.notice("stuck handler finished", metadata: report.logMetadata)
        hooks.stuckHandler(report)
    }
}
