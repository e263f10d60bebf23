internal import TroupeLocks
import Logging
import Synchronization
internal import CTroupe

/// Runs actors: owns the worker threads, the timer, the dead-letter office and every live
/// actor. Create one per process (or per test), spawn actors, and shut it down at the end.
///
/// ```swift
/// let system = ActorSystem()
/// let counter = system.spawn(Counter())
/// counter.tell(.add(1))
/// print(try await counter.ask { .get($0) })
/// await system.shutdown()
/// ```
public final class ActorSystem: Sendable {
    /// How a system runs.
    public struct Configuration: Sendable {
        /// Name used for threads and logs.
        public var name: String
        /// Shared worker threads; `nil` means one per CPU of the process's affinity mask.
        public var workerCount: Int?
        /// Pin each shared worker to one CPU of the affinity mask.
        public var pinWorkers: Bool
        /// Messages an actor handles per turn before the worker moves on to another actor.
        /// Larger batches amortise scheduling; smaller ones keep latency fair.
        public var batchSize: Int
        /// Timeout of asks that do not pass one.
        public var askTimeout: Duration
        /// Decides what happens when a handler throws, for actors spawned without a decider.
        public var failureDecider: FailureDecider
        /// Where Troupe logs. Troupe never sets up a logging backend: pass a logger built on
        /// the backend your program bootstrapped.
        public var logger: Logger
        /// Services (non-actor objects such as stores and clients) that actors resolve from their
        /// context (``ActorContext/services``). A reference: copies of the configuration share it.
        public var services: ServiceLocator
        /// What the system measures about itself: sampled latency histograms, the stuck-handler
        /// watchdog, mailbox depths (see ``ActorSystem/Introspection``).
        public var introspection: Introspection
        /// Carries a context (a trace) with every message, from its send to its handler; `nil`
        /// (the default) carries nothing. See ``MessageContextPropagation``.
        public var contextPropagation: (any MessageContextPropagation)?
        /// Runs the system's actors on the caller's thread, one message at a time, on virtual
        /// time, instead of on worker threads (`TroupeTesting`'s deterministic system sets it;
        /// see ``ManualDriver``). `nil` (the default): worker threads and the real clock.
        public var manualDriver: ManualDriver?
        /// Whether an ask of an idle actor, made on one of the workers (by an actor's
        /// `context.ask`, or by a task on ``ActorSystem/taskExecutor`` or on a Troupe serial
        /// executor), runs the actor's turn on the asking thread instead of waking a worker for
        /// it: an answer given in that turn returns without suspending the task (see "Direct
        /// hand-off" in the Performance article). `true` by default. Turn it off when handlers
        /// must never run inside an asking task's job (they then see no task-local values of
        /// the asker, and always run after the asker's own turn or job).
        public var directHandOff: Bool

        public init(
            name: String = "troupe",
            workerCount: Int? = nil,
            pinWorkers: Bool = true,
            batchSize: Int = 64,
            askTimeout: Duration = .seconds(10),
            failureDecider: @escaping FailureDecider = { _ in .stop },
            logger: Logger = Logger(label: "troupe"),
            services: ServiceLocator = ServiceLocator(),
            introspection: Introspection = Introspection(),
            contextPropagation: (any MessageContextPropagation)? = nil,
            manualDriver: ManualDriver? = nil,
            directHandOff: Bool = true
        ) {
            self.name = name
            self.workerCount = workerCount
            self.pinWorkers = pinWorkers
            self.batchSize = batchSize
            self.askTimeout = askTimeout
            self.failureDecider = failureDecider
            self.logger = logger
            self.services = services
            self.introspection = introspection
            self.contextPropagation = contextPropagation
            self.manualDriver = manualDriver
            self.directHandOff = directHandOff
        }
    }

    public let configuration: Configuration
    /// Every message that could not be delivered, counted by reason.
    public let deadLetters: DeadLetterOffice
    /// Runtime hooks (actor started, stopped, failed; dead letters) for plugins and monitoring.
    public let hooks = SystemHooks()
    /// Registered actor providers and loaded plugins (see ``SystemBuilder``).
    let providers = ProviderTable()
    /// Sampled histograms, job lanes, the stuck-handler watchdog.
    let introspector: Introspector

    let scheduler: Scheduler
    private let schedulerHandle: Unmanaged<Scheduler>
    @usableFromInline let timer: DeadlineTimer
    /// `configuration.askTimeout`, converted once.
    private let defaultAskLimit: AskLimit
    /// Every actor spawned and not yet stopped, and who watches them.
    private let liveActors = Locked(LiveActors())
    /// Actors paused by a delayed restart, so that shutdown can cut the pause short.
    private let suspended = Locked<(accepting: Bool, entries: [ObjectIdentifier: ResumeEntry])>((true, [:]))
    private let actorIDs = Atomic<UInt64>(0)
    /// The system's ``Phase``: moved by the shutting-down thread, read by senders.
    private let phase = AtomicLifecycle<Phase>(.running)
    /// Whether a user message may take the fast send path: the system accepts and propagates no
    /// context. Written once at init and once when shutdown begins; read by every send (the
    /// same one load that checking the phase cost).
    let fastSendOpen: Atomic<Bool>
    /// `configuration.contextPropagation`, read on the slow send path and by the turn.
    let contextPropagation: (any MessageContextPropagation)?
    /// Whether ``contextPropagation`` is set: a plain load where testing the optional
    /// existential would copy it (~80 instructions, measured on every actor ask).
    let propagatesContext: Bool

    /// Where a system is in its life (``AtomicLifecycle`` checks the moves in debug builds).
    enum Phase: UInt8, LifecycleState {
        /// Accepting messages.
        case running
        /// Shutdown began: new messages are dead letters; actors drain and stop.
        case shuttingDown
        /// Every actor stopped and every thread was joined.
        case terminated

        static func allows(from current: Self, to next: Self) -> Bool {
            switch (current, next) {
            case (.running, .shuttingDown), (.shuttingDown, .terminated): true
            default: false
            }
        }
    }
    private let shutdownStarted = Atomic<Bool>(false)
    private let everyoneStopped = EventCount()
    /// The task executor, made on first use; dropped when shutdown finishes (its lanes hold the
    /// system, so keeping it would be a reference cycle). Tasks that prefer it own it.
    let taskExecutorSlot = Locked<TroupeTaskExecutor?>(nil)

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        contextPropagation = configuration.contextPropagation
        propagatesContext = configuration.contextPropagation != nil
        fastSendOpen = Atomic(configuration.contextPropagation == nil)
        manualDriver = configuration.manualDriver
        isManual = configuration.manualDriver != nil
        var introspection = configuration.introspection
        // No worker to watch: the driver's caller runs every handler.
        if manualDriver != nil { introspection.stuckHandlerThreshold = nil }
        introspector = Introspector(introspection)
        deadLetters = DeadLetterOffice(logger: configuration.logger)
        // A manual system has one shared worker whose thread never starts: its run queue is where
        // runnable cells wait for the driver.
        let workers = manualDriver != nil ? 1 : configuration.workerCount ?? max(1, Threads.allowedCPUs().count)
        scheduler = Scheduler(
            name: configuration.name, workerCount: workers, pin: configuration.pinWorkers && manualDriver == nil,
            batchSize: configuration.batchSize, handOff: configuration.directHandOff)
        schedulerHandle = Unmanaged.passUnretained(scheduler)
        timer =
            manualDriver != nil
            ? DeadlineTimer(virtualTimeNamed: configuration.name) : DeadlineTimer(name: configuration.name)
        timerEpoch = timer.now
        defaultAskLimit = AskLimit(
            duration: configuration.askTimeout, nanoseconds: configuration.askTimeout.nanoseconds)
        if let manualDriver {
            manualDriver.attach(self)
        } else {
            scheduler.start()
        }
        hooks.attach(deadLetters: deadLetters)
        introspector.watchdog?.start(watching: self)
    }

    /// The driver of a manual system (``Configuration/manualDriver``); nil for a threaded one.
    let manualDriver: ManualDriver?
    /// Whether ``manualDriver`` is set (read by the inlinable ask).
    @usableFromInline let isManual: Bool

    /// An ask was sent and is awaited on a manual system: run the system until it completes,
    /// unless this thread is running one of the system's steps (then it suspends as usual).
    @usableFromInline
    func driveManually(until ask: AskStateBase) {
        manualDriver?.driveIfAwaitedOutsideAStep(ask)
    }
    /// The timer's clock when the system was made (``uptime``'s zero).
    private let timerEpoch: Int64

    var logger: Logger { configuration.logger }

    /// The time limit of an ask: `timeout`, or the configured default. Any thread.
    @usableFromInline
    func askLimit(_ timeout: Duration?) -> AskLimit {
        guard let timeout else { return defaultAskLimit }
        return AskLimit(duration: timeout, nanoseconds: timeout.nanoseconds)
    }
    var isAccepting: Bool { phase.isRelaxed(.running) }

    /// Number of shared worker threads.
    public var workerCount: Int { scheduler.shared.count }

    /// Actors spawned and not yet stopped.
    public var liveActorCount: Int { liveActors.withLock { $0.count } }

    /// Time since the system was made, on the clock its timers use: the monotonic clock, or on
    /// a manual system (``Configuration/manualDriver``) virtual time. Measure intervals that
    /// tests should control (restart-intensity windows, quiet periods) with it rather than with
    /// `ContinuousClock`. Any thread.
    public var uptime: Duration { .nanoseconds(timer.now - timerEpoch) }

    /// Whether `shutdown` has begun.
    public var isShuttingDown: Bool { !phase.is(.running) }

    // MARK: Spawning

    /// Spawns an actor from an instance, with the default ``SpawnOptions``. It cannot be
    /// restarted after a failure (there is no factory); use ``spawn(options:factory:)`` for that.
    @discardableResult
    @inlinable
    public func spawn<Actor: SpawnableActor>(_ actor: sending Actor) -> ActorRef<Actor.Definition.Message> {
        // Compiled for the definition in the caller's module: the cell's class metadata comes
        // from a cache there instead of a generic-metadata lookup, and no options value is
        // built, copied and destroyed (about 100 instructions per spawn, measured).
        let cell = ActorCell<Actor.Definition>(
            system: self, box: ActorCell<Actor.Definition>.makeBox(Actor.runnable(actor)), config: nil)
        start(cell, config: nil, parent: nil)
        return ActorRef(cell: cell)
    }

    /// Spawns an actor from an instance with `options`. It cannot be restarted after a failure
    /// (there is no factory); use ``spawn(options:factory:)`` for that.
    @discardableResult
    @inlinable
    public func spawn<Actor: SpawnableActor>(
        _ actor: sending Actor, options: SpawnOptions
    ) -> ActorRef<Actor.Definition.Message> {
        guard options.needsNoCellConfig else {
            return spawnRef(Actor.runnable(actor), factory: nil, options: options, parent: nil)
        }
        return spawn(actor)
    }

    /// Spawns an actor from a factory, which is called again to restart it after a failure.
    @discardableResult
    public func spawn<Actor: SpawnableActor>(
        options: SpawnOptions = .default, factory: @escaping @Sendable () -> Actor
    ) -> ActorRef<Actor.Definition.Message> {
        let runnable = Actor._runnableFactory(factory)
        return spawnRef(runnable(), factory: runnable, options: options, parent: nil)
    }

    /// Spawns from a factory of runnable definitions (the registrar's restart factories).
    func spawnRef<Definition: ActorDefinition>(
        options: SpawnOptions, factory: @escaping @Sendable () -> Definition
    ) -> ActorRef<Definition.Message> {
        spawnRef(factory(), factory: factory, options: options, parent: nil)
    }

    /// Spawns and returns the spawner's ref. A self-invalidating actor is held alive for the
    /// spawner until that ref exists, so that it cannot invalidate itself in between (its first
    /// turn may run on a worker before `makeCell` even returns).
    @usableFromInline
    func spawnRef<Definition: ActorDefinition>(
        _ definition: consuming Definition, factory: (@Sendable () -> Definition)?,
        options: SpawnOptions, parent: AnyCell?
    ) -> ActorRef<Definition.Message> {
        let cell = makeCell(definition, factory: factory, options: options, parent: parent)
        let ref = ActorRef(cell: cell)
        cell.config?.selfInvalidation?.releaseSpawnerHold()
        return ref
    }

    func makeCell<Definition: ActorDefinition>(
        _ definition: consuming Definition, factory: (@Sendable () -> Definition)?,
        options: SpawnOptions, parent: AnyCell?
    ) -> ActorCell<Definition> {
        var config: CellConfig?
        if CellConfig.needed(for: options, hasFactory: factory != nil) {
            let dedicated =
                options.executor == .dedicatedThread && manualDriver == nil
                ? scheduler.makeDedicatedWorker(label: options.name ?? "\(configuration.name)-dedicated") : nil
            config = CellConfig(options: options, dedicated: dedicated, factory: factory)
        }
        let cell = ActorCell(system: self, instance: definition, config: config)
        start(cell, config: config, parent: parent)
        return cell
    }

    /// Registers a new cell and schedules its first turn (which runs `started`); during
    /// shutdown, stops it at once instead. The non-generic half of every spawn.
    @usableFromInline
    func start(_ cell: AnyCell, config: CellConfig?, parent: AnyCell?) {
        // Before the first turn is scheduled, so the dedicated thread sees it (the run queue's
        // push publishes it).
        config?.dedicated?.servedCell = cell
        if let parent {
            cell.extrasCreatingIfNeeded.parent = parent
            parent.extrasCreatingIfNeeded.children[ObjectIdentifier(cell)] = cell
        }
        guard register(cell) else {
            // Shutting down: the actor never runs; everything sent to it is dead-lettered.
            cell.stopBeforeStarting()
            if let dedicated = config?.dedicated { scheduler.retireDedicated(dedicated) }
            logger.warning(
                "spawn during shutdown: the actor is stopped at once", metadata: ["actor": "\(cell.address)"])
            return
        }
        config?.selfInvalidation?.holdForSpawner(cell)
        if CTroupe_mailbox_try_acquire(cell.mailbox) { schedule(cell) }
    }

    /// Places a cell whose scheduling right the caller just won (see ``Scheduler``). The
    /// scheduler lives as long as the system, so the hot path borrows it without retaining.
    @inline(__always)
    func schedule(_ cell: AnyCell) {
        schedulerHandle._withUnsafeGuaranteedRef { $0.schedule(cell) }
    }

    func nextActorID() -> UInt64 { actorIDs.add(1, ordering: .relaxed).newValue }

    /// Whether the workers have ended (the last step of shutdown).
    var schedulerHasTerminated: Bool { schedulerHandle._withUnsafeGuaranteedRef { $0.hasTerminated } }

    /// The index of the calling thread's shared worker, if it is one of this system's; the
    /// scheduler borrowed, not retained.
    func currentSharedWorkerIndex() -> Int? {
        schedulerHandle._withUnsafeGuaranteedRef { $0.currentSharedWorkerIndex() }
    }

    // MARK: Live actors and death watch

    private func register(_ cell: AnyCell) -> Bool {
        liveActors.withLock { live in
            guard isAccepting else { return false }
            live.insert(cell)
            return true
        }
    }

    /// Called by a cell's own turn when it stops: leaves the live list and tells its watchers.
    func unregister(_ cell: AnyCell, reason: TerminationReason) {
        let (remaining, watchers) = liveActors.withLock { live in
            let watchers = live.remove(cell)
            return (live.count, watchers)
        }
        LiveActors.releaseRemoved(cell)  // the caller's reference keeps the cell alive here
        if let watchers {
            let notice = Terminated(actor: cell.address, reason: reason)
            for watcher in watchers { Self.tell(watcher, notice, about: cell) }
        }
        if remaining == 0 { everyoneStopped.notify(all: true) }
    }

    /// Registers `watcher` for `target`'s termination; tells it at once (exactly once) when
    /// the target has already terminated. Any thread.
    func addWatcher(_ watcher: LiveActors.Watcher, to target: AnyCell) {
        let added = liveActors.withLock { $0.addWatcher(watcher, to: target) }
        if !added {
            Self.tell(
                watcher, Terminated(actor: target.address, reason: target.terminationReason ?? .stopped), about: target)
        }
    }

    /// Forgets every watch `watcher` (an actor) holds on `target`. Any thread.
    func removeWatcher(_ watcher: AnyCell, from target: AnyCell) {
        liveActors.withLock { $0.removeWatches(of: watcher, on: target) }
    }

    private static func tell(_ watcher: LiveActors.Watcher, _ notice: Terminated, about target: AnyCell) {
        switch watcher {
        case .actor(let cell): cell.sendSystem(.watchedTerminated(notice, target.id))
        case .callback(let callback): callback(notice)
        }
    }

    // MARK: Delayed restarts

    /// Pauses `cell` for `delay` (a delayed restart). Returns the entry that resumes it, or
    /// nil during shutdown (restart at once instead). Called on the cell's own turn.
    func suspend(_ cell: AnyCell, for delay: Duration) -> ResumeEntry? {
        let entry = ResumeEntry(cell: cell)
        let accepted = suspended.withLock { state in
            guard state.accepting else { return false }
            state.entries[ObjectIdentifier(entry)] = entry
            return true
        }
        guard accepted else { return nil }
        timer.schedule(entry, after: delay)
        return entry
    }

    /// Whether `entry` was still pending (the first caller resumes it).
    func forgetSuspended(_ entry: ResumeEntry) -> Bool {
        suspended.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(entry)) != nil }
    }

    /// Shutdown: resume every paused actor now, and pause none from now on.
    private func resumeSuspendedEarly() {
        let entries = suspended.withLock { state in
            state.accepting = false
            defer { state.entries.removeAll() }
            return Array(state.entries.values)
        }
        for entry in entries {
            timer.cancel(entry)
            entry.resumeNow()
        }
    }

    // MARK: Shutdown

    /// Shuts down gracefully: stops accepting new messages (they become dead letters with
    /// ``DeadLetterReason/systemShutdown``), lets every actor handle what was already in its
    /// mailbox, stops every actor (`stopped` hooks run), then joins the worker threads. Every
    /// message sent is either handled or dead-lettered. Calling it again waits for the first.
    /// Waits as long as the slowest handler takes; ``shutdown(deadline:)`` bounds the wait.
    public func shutdown() async {
        _ = await shutdown(until: nil)
    }

    /// ``shutdown()`` that returns by `deadline` at the latest, with a report: complete, or
    /// listing the actors whose handler had not returned (and those queued behind them). Those
    /// actors handle no further message; what they hold is dead-lettered as soon as their
    /// handler returns, and the shutdown then finishes by itself. See ``ShutdownReport``.
    public func shutdown(deadline: Duration) async -> ShutdownReport {
        await shutdown(until: MonotonicDeadline.after(deadline))
    }

    private func shutdown(until deadline: Int64?) async -> ShutdownReport {
        // The waiting is blocking; do it on a thread of its own, off the cooperative pool.
        await withUnsafeContinuation { (continuation: UnsafeContinuation<ShutdownReport, Never>) in
            Threads.detach(
                Threads.start(name: "\(configuration.name)-shutdown") { [self] in
                    continuation.resume(returning: shutdownBlocking(until: deadline))
                })
        }
    }

    /// ``shutdown()`` for synchronous callers. Not on a worker thread (it would wait for itself).
    public func shutdownBlocking() {
        _ = shutdownBlocking(until: nil)
    }

    /// ``shutdown(deadline:)`` for synchronous callers. Not on a worker thread.
    public func shutdownBlocking(deadline: Duration) -> ShutdownReport {
        shutdownBlocking(until: MonotonicDeadline.after(deadline))
    }

    /// `deadline`: monotonic nanoseconds, or nil to wait as long as it takes.
    private func shutdownBlocking(until deadline: Int64?) -> ShutdownReport {
        if CTroupe_current_worker() != nil {
            fatalError(
                "shutdownBlocking() called on a Troupe worker thread; call it from outside the actors (or use `await system.shutdown()` from a task)"
            )
        }
        if let inline = InlineTurns.open {
            // It waits for every actor, the ones this thread's scope holds too.
            if inline.runningTurn {
                fatalError(
                    "shutdownBlocking() called by a handler running in runningTurnsHere; call it from outside the actors"
                )
            }
            inline.handOffCaptured()
        }
        guard
            shutdownStarted.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
        else {
            // Another caller runs the shutdown: wait for it to finish (or for the deadline).
            if waitForStop(until: deadline, { phase.is(.terminated) }) {
                return ShutdownReport(unstopped: [])
            }
            return ShutdownReport(unstopped: abandonLiveActors())
        }
        // The fast path closes first: a sender that still took it did so before the phase changed.
        fastSendOpen.store(false, ordering: .sequentiallyConsistent)
        phase.advance(to: .shuttingDown)
        // Every live actor handles its pending messages, then the stop.
        for cell in liveCells() { cell.requestStop(.systemShutdown) }
        resumeSuspendedEarly()
        if let manualDriver {
            // Nobody else runs a manual system's actors: drain it here, in order, moving virtual
            // time to the next deadline while actors remain (a handler's ask waiting for its
            // timeout, a timer the actor waits for).
            _ = manualDriver.drainInOrder()
            var rounds = 0
            while liveActorCount > 0, rounds < 10_000, let next = timer.nextDeadline {
                _ = timer.advanceVirtualTime(to: next)
                _ = manualDriver.drainInOrder()
                rounds += 1
            }
        }
        if waitForStop(until: deadline, { liveActorCount == 0 }) {
            finishShutdown()
            return ShutdownReport(unstopped: [])
        }
        // The deadline passed with handlers still running: report them, let them handle
        // nothing more, and finish later on a thread that keeps the system (and so the
        // threads' scheduler) alive until then.
        let unstopped = abandonLiveActors()
        Threads.detach(
            Threads.start(name: "\(configuration.name)-shutdown") { [self] in
                _ = waitForStop(until: nil) { liveActorCount == 0 }
                finishShutdown()
            })
        logger.warning("shutdown deadline passed", metadata: ["unstopped": "\(unstopped.map(\.description))"])
        return ShutdownReport(unstopped: unstopped)
    }

    /// The live cell at `address`, named, if there is one; the address is compared, never
    /// dereferenced, and the cell is read under the lock that keeps it alive.
    func findLiveCell(_ address: UInt) -> (address: ActorAddress, messageType: String, isSwiftJob: Bool)? {
        liveActors.withLock { live in
            live.first { UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque()) == address }
                .map { ($0.address, $0.messageTypeName, false) }
        }
    }

    func liveCells() -> [AnyCell] {
        liveActors.withLock { $0.cells }
    }

    /// Marks every live actor abandoned (its remaining user messages are dead-lettered instead
    /// of handled) and describes it. Idempotent.
    private func abandonLiveActors() -> [ShutdownReport.UnstoppedActor] {
        liveCells().map { cell in
            cell.lifecycle.bitwiseOr(Lifecycle.abandoned.rawValue, ordering: .releasing)
            let depth = CTroupe_mailbox_depth(cell.mailbox)
            return ShutdownReport.UnstoppedActor(
                address: cell.address, pendingMessages: depth < 0 ? nil : Int(depth),
                mailboxWasEmpty: CTroupe_mailbox_is_empty(cell.mailbox))
        }
    }

    /// Every actor has stopped: join the threads, stop the timer, let go of observers.
    private func finishShutdown() {
        scheduler.stopAndJoin()
        timer.stop()
        introspector.close()
        phase.advance(to: .terminated)
        providers.close()
        // Observers often capture the system; dropping them breaks that cycle, so the system
        // is freed with its last user reference.
        hooks.removeAll()
        deadLetters.removeAllObservers()
        taskExecutorSlot.withLock { $0 = nil }
        everyoneStopped.notify(all: true)
    }

    /// Waits until `condition` holds (re-checked whenever the last actor stops or shutdown
    /// finishes) or `deadline` passes; returns whether it holds.
    private func waitForStop(until deadline: Int64?, _ condition: () -> Bool) -> Bool {
        while true {
            let epoch = everyoneStopped.prepareWait()
            if condition() {
                everyoneStopped.cancelWait()
                return true
            }
            var timeout: Int64 = -1
            if let deadline {
                timeout = deadline - CTroupe_monotonic_ns()
                if timeout <= 0 {
                    everyoneStopped.cancelWait()
                    return condition()
                }
            }
            everyoneStopped.wait(epoch: epoch, timeoutNanoseconds: timeout)
        }
    }
}
