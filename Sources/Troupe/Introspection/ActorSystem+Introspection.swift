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
        let workers = workerReads()
        // Strong references from here on: the cells named below cannot go while they are read.
        let cells = liveCells()
        return makeSnapshot(actors: cells, live: cells.count, matching: cells.count, workers: workers, alsoRunning: [])
    }

    /// What each worker runs (a cell's identity, 0 when idle) and how many handlers it has
    /// started, read first: a snapshot names the running cells from the live actors it reads
    /// after.
    struct WorkerReads {
        let shared: [(cell: UInt, handlersStarted: UInt)]
        let dedicated: [(cell: UInt, handlersStarted: UInt)]

        var runningIdentities: Set<UInt> {
            Set(shared.map(\.cell) + dedicated.map(\.cell)).subtracting([0])
        }
    }

    func workerReads() -> WorkerReads {
        let shared = scheduler.sharedWorkers.map { worker in
            // Safety: the scheduler (held by this system) holds its shared workers for its whole life.
            worker._withUnsafeGuaranteedRef {
                ($0.currentCell.load(ordering: .relaxed), $0.progress.handlersStarted)
            }
        }
        let dedicated = scheduler.dedicatedWorkers.map {
            ($0.currentCell.load(ordering: .relaxed), $0.progress.handlersStarted)
        }
        return WorkerReads(shared: shared, dedicated: dedicated)
    }

    /// The snapshot of `cells` (strongly held by the caller; `matching` of the `live` actors
    /// matched what the caller asked), the workers as `reads` saw them (naming the cells they
    /// ran from `cells` and `alsoRunning`), the job lanes and the system's histograms.
    func makeSnapshot(
        actors cells: [AnyCell], live: Int, matching: Int, workers reads: WorkerReads, alsoRunning: [AnyCell]
    ) -> SystemSnapshot {
        let running = reads.runningIdentities
        let taskLanes = taskExecutorSlot.withLock { $0?.lanes } ?? []
        let serialLanes = introspector.liveSerialLanes
        var byAddress: [UInt: AnyCell] = [:]
        if !running.isEmpty {
            for cell in cells + alsoRunning where running.contains(Self.identity(of: cell)) {
                byAddress[Self.identity(of: cell)] = cell
            }
            for lane in taskLanes { byAddress[Self.identity(of: lane)] = lane }
            for lane in serialLanes { byAddress[Self.identity(of: lane)] = lane }
        }
        // Type names once per cell class (a name is `String(reflecting:)`, about a microsecond).
        var typeNames: [ObjectIdentifier: (definition: String, message: String, isInspectable: Bool)] = [:]
        let actors = cells.map { cell in
            let type = ObjectIdentifier(Swift.type(of: cell))
            let names =
                typeNames[type]
                ?? {
                    let made = (cell.definitionTypeName, cell.messageTypeName, cell.isInspectable)
                    typeNames[type] = made
                    return made
                }()
            let histograms = cell.ownHistograms
            return ActorSnapshot(
                address: cell.address, parentID: cell.parentID == 0 ? nil : cell.parentID,
                definitionType: names.definition, messageType: names.message,
                state: cell.observedState(running: running.contains(Self.identity(of: cell))),
                mailboxDepth: cell.observedMailboxDepth, hasPendingMessages: cell.observedHasPendingMessages,
                messagesProcessed: cell.messagesProcessed,
                failures: Int(cell.failureTotal.load(ordering: .relaxed)),
                restarts: Int(cell.restartTotal.load(ordering: .relaxed)),
                isRestartable: cell.config?.factory != nil, isInspectable: names.isInspectable,
                timeInMailbox: histograms.map { LatencyHistogram(copying: $0.timeInMailbox) },
                handlerDuration: histograms.map { LatencyHistogram(copying: $0.handlerDuration) })
        }
        let lanes =
            taskLanes.enumerated().map { index, lane in
                Self.laneSnapshot(lane, executor: .task(worker: index), running: running)
            } + serialLanes.map { Self.laneSnapshot($0, executor: .serial, running: running) }

        var workers: [WorkerSnapshot] = []
        for (index, read) in reads.shared.enumerated() {
            let current = read.cell == 0 ? nil : byAddress[read.cell]
            workers.append(
                WorkerSnapshot(
                    index: index, isDedicated: false,
                    running: current.map { cell in
                        WorkerSnapshot.Running(
                            actor: cell.address, isSwiftJob: cell.isJobLane, messageType: cell.messageTypeName,
                            handlerRunningFor: introspector.watchdog?.runningTime(
                                worker: index, cell: read.cell, progress: read.handlersStarted))
                    }, handlersStarted: UInt64(read.handlersStarted)))
        }
        for (offset, read) in reads.dedicated.enumerated() {
            let current = read.cell == 0 ? nil : byAddress[read.cell]
            workers.append(
                WorkerSnapshot(
                    index: reads.shared.count + offset, isDedicated: true,
                    running: current.map {
                        WorkerSnapshot.Running(
                            actor: $0.address, isSwiftJob: false, messageType: $0.messageTypeName,
                            handlerRunningFor: nil)
                    }, handlersStarted: UInt64(read.handlersStarted)))
        }
        return SystemSnapshot(
            systemName: configuration.name,
            uptime: .nanoseconds(CTroupe_monotonic_ns() - introspector.createdAt),
            actors: actors, liveActorCount: live, matchingActorCount: matching, jobLanes: lanes,
            workers: workers,
            handlersStartedOffWorkers: UInt64(scheduler.handlersStartedOffWorkers.load(ordering: .relaxed)),
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

extension ActorSystem {
    /// Asks the live actor whose ``ActorAddress/id`` is `id` to stop, as ``ActorRef/stop()``
    /// does: it finishes its current message, its mailbox's later messages become dead letters,
    /// and its watchers are told. For operators' tools that know an actor only from a snapshot
    /// (TroupeObserver's stop button, a debug endpoint); code that holds a reference stops it
    /// through the reference. Returns false when no live actor has that id (it had stopped, or
    /// never existed). O(live actors). Any thread.
    @discardableResult
    public func stopActor(id: UInt64) -> Bool {
        guard let cell = liveCell(id: id) else { return false }
        cell.requestStop()
        return true
    }

    /// Restarts the live actor whose ``ActorAddress/id`` is `id` before its next message, as
    /// ``ActorRef/requestRestart(reason:after:)`` does (a fresh instance from its spawn factory,
    /// the mailbox kept), with ``RestartRequested`` as the reason. For operators' tools, like
    /// ``stopActor(id:)``. Returns false when no live actor has that id or it cannot restart
    /// (it was spawned from an instance: ``ActorSnapshot/isRestartable``). O(live actors). Any
    /// thread.
    @discardableResult
    public func restartActor(id: UInt64) -> Bool {
        guard let cell = liveCell(id: id) else { return false }
        return cell.requestRestart(reason: RestartRequested(), after: .zero)
    }

    /// The live actor whose id is `id`, strongly held, for the operators' calls above and
    /// ``describeActor(id:timeout:)`` and ``sendTestMessage(toActor:text:)``: a walk under the
    /// actor list's lock that compares one word per actor. O(live actors). Any thread.
    func liveCell(id: UInt64) -> AnyCell? {
        liveActors.withLock { $0.first { $0.id == id } }
    }
}
