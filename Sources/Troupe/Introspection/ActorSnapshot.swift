/// One live actor, as ``ActorSystem/snapshot()`` saw it. Counters are read without stopping the
/// actor, so values of one actor may be a few messages apart.
public struct ActorSnapshot: Sendable {
    /// What the actor was doing.
    public enum State: String, Sendable, Hashable {
        /// Nothing to do: its mailbox was empty and it was not scheduled.
        case idle
        /// Waiting on a run queue (or a worker's next-slot) for a worker.
        case scheduled
        /// Running on a worker.
        case running
        /// Paused by a delayed restart (see ``FailureDirective/restart(after:failingMessage:)``).
        case suspended
        /// Stopping: the system is shutting down and the actor drains its mailbox.
        case stopping
    }

    public let address: ActorAddress
    /// The actor's registered name, if it has one (the same as `address.name`).
    public var name: String? { address.name }
    /// The id of the actor that spawned it with ``ActorContext/spawn(_:options:)`` (its parent:
    /// when the parent stops, so does it); nil for an actor the system spawned. The parent may
    /// have stopped since. Search for `parent:#ID` to list an actor's children
    /// (``ActorSystem/snapshot(topActors:by:matching:)``).
    public let parentID: UInt64?
    /// The type that defines it (`Counter`, or a ``HandlerActor``'s own type).
    public let definitionType: String
    /// The type of its messages (for a ``HandlerActor``, ``AnyMessage``).
    public let messageType: String
    public let state: State
    /// Messages in its mailbox, when it counts them (a bounded mailbox,
    /// ``SpawnOptions/tracksMailboxDepth``, or ``ActorSystem/Introspection/tracksMailboxDepths``);
    /// `nil` otherwise (see ``hasPendingMessages``).
    public let mailboxDepth: Int?
    /// Whether its mailbox held anything.
    public let hasPendingMessages: Bool
    /// Messages taken from its mailbox so far (user and system messages, each counted as its
    /// batch begins).
    public let messagesProcessed: UInt64
    /// How often a handler threw.
    public let failures: Int
    /// How often it was restarted.
    public let restarts: Int
    /// Whether it can be restarted (it was spawned from a factory): see
    /// ``ActorSystem/restartActor(id:)``.
    public let isRestartable: Bool
    /// Whether its definition is an ``InspectableActor``: it describes itself on request
    /// (``ActorSystem/describeActor(id:timeout:)``) and may take test messages
    /// (``ActorSystem/sendTestMessage(toActor:text:)``).
    public let isInspectable: Bool
    /// Its sampled time-in-mailbox histogram, when ``ActorSystem/Introspection/perActorHistograms``
    /// is on and it handled a sampled message.
    public let timeInMailbox: LatencyHistogram?
    /// Its sampled handler-duration histogram (same conditions).
    public let handlerDuration: LatencyHistogram?
}

/// A Swift executor's job lane (see ``TroupeSerialExecutor`` and ``TroupeTaskExecutor``), as
/// ``ActorSystem/snapshot()`` saw it.
public struct JobLaneSnapshot: Sendable {
    /// Which executor the lane serves.
    public enum Executor: Sendable, Hashable {
        /// A ``TroupeSerialExecutor`` (one lane).
        case serial
        /// The system's ``TroupeTaskExecutor``: the lane of one shared worker.
        case task(worker: Int)
    }

    public let address: ActorAddress
    public let executor: Executor
    /// ``ActorSnapshot/State/idle``, ``ActorSnapshot/State/scheduled`` or
    /// ``ActorSnapshot/State/running``.
    public let state: ActorSnapshot.State
    public let hasPendingJobs: Bool
    /// Jobs taken to run so far.
    public let jobsRun: UInt64
}

/// One worker thread, as ``ActorSystem/snapshot()`` saw it.
public struct WorkerSnapshot: Sendable {
    /// What a busy worker runs.
    public struct Running: Sendable {
        /// The actor (or job lane) whose turn it runs.
        public let actor: ActorAddress
        /// Whether it runs a Swift executor's jobs rather than an actor's handlers.
        public let isSwiftJob: Bool
        /// The message type of that actor's handlers, or "Swift job".
        public let messageType: String
        /// How long its current handler has run, at least, as the stuck-handler watchdog
        /// measured it (rounded down to its sampling step); `nil` when the watchdog is off or
        /// has not seen this handler yet (it started less than one step ago).
        public let handlerRunningFor: Duration?
    }

    /// The shared worker's index (0-based), or the dedicated thread's position after them.
    public let index: Int
    /// A thread of its own for one actor (``ActorExecutor/dedicatedThread``).
    public let isDedicated: Bool
    /// `nil` when idle (between turns, polling or parked).
    public let running: Running?
    /// Handlers this worker has started (for dedicated threads, 0: not counted).
    public let handlersStarted: UInt64
}
