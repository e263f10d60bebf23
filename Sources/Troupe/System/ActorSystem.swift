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
        /// hand-off" in <doc:UsingSwiftConcurrency>); so does the first ask of an actor spawned
        /// there (its `started`, then the ask). `true` by default. Turn it off when handlers must
        /// never run inside an asking task's job (they then see no task-local values of the
        /// asker, and always run after the asker's own turn or job).
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
    let schedulerHandle: Unmanaged<Scheduler>
    @usableFromInline let timer: DeadlineTimer
    /// `configuration.askTimeout`, converted once.
    private let defaultAskLimit: AskLimit
    /// Every actor spawned and not yet stopped, and who watches them.
    let liveActors = Locked(LiveActors())
    /// Actors paused by a delayed restart, so that shutdown can cut the pause short.
    let suspended = Locked<(accepting: Bool, entries: [ObjectIdentifier: ResumeEntry])>((true, [:]))
    let actorIDs = Atomic<UInt64>(0)
    /// The system's ``Phase``: moved by the shutting-down thread, read by senders.
    let phase = AtomicLifecycle<Phase>(.running)
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
    let shutdownStarted = Atomic<Bool>(false)
    let everyoneStopped = EventCount()
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
            batchSize: configuration.batchSize, handOff: configuration.directHandOff,
            manual: configuration.manualDriver != nil)
        // Safety: unretained: `scheduler`, a `let` of this system, holds it for the system's whole life.
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
}
