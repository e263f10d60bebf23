/// What a full bounded mailbox does with one more message.
public enum MailboxOverflowPolicy: Sendable, Hashable {
    /// The new message is dead-lettered; the sender gets `.deadLettered(.mailboxFull(.dropNewest))`.
    case dropNewest
    /// The new message is enqueued and the oldest pending user message is dead-lettered instead
    /// of handled; the sender gets `.enqueuedDroppingOldest`.
    case dropOldest
    /// The new message is refused; the sender gets `.deadLettered(.mailboxFull(.fail))` and is
    /// expected to treat it as an error (back off, retry, report).
    case fail
}

/// The mailbox of one actor.
public enum MailboxKind: Sendable, Hashable {
    /// Grows as needed (the default). Memory is the only bound.
    case unbounded
    /// Holds at most `capacity` user messages; system messages (stop, notices) are never
    /// counted or dropped.
    case bounded(capacity: Int, overflow: MailboxOverflowPolicy)
}

/// Where an actor runs.
public enum ActorExecutor: Sendable, Hashable {
    /// The system's shared, pinned workers (the default).
    case shared
    /// A thread of its own, for actors whose handlers block (file I/O, blocking C APIs), so
    /// that they cannot starve the shared workers. The thread ends when the actor stops.
    case dedicatedThread
}

/// How to spawn an actor.
public struct SpawnOptions: Sendable {
    /// A name for logs and dead letters; need not be unique.
    public var name: String?
    public var mailbox: MailboxKind
    public var executor: ActorExecutor
    /// `nil`: the system's ``ActorSystem/Configuration/failureDecider``.
    public var failureDecider: FailureDecider?
    /// Keep a count of pending messages (``ActorRef/mailboxDepth``), as load-balancing pools
    /// need. Costs two atomic operations per message; bounded mailboxes always count.
    public var tracksMailboxDepth: Bool
    /// Stop the actor by itself once no ``ActorRef`` to it remains and its mailbox is empty
    /// (a self-invalidating actor). Its `stopped` hook runs on the actor, with
    /// ``ActorContext/terminationReason`` `.selfInvalidated`, before it is released: the place
    /// to close files and connections. References the runtime holds (the live-actor list, timers, run
    /// queues) do not count; a ref stored anywhere else, including in the actor's own state,
    /// keeps it alive.
    public var selfInvalidating: Bool

    public init(
        name: String? = nil, mailbox: MailboxKind = .unbounded, executor: ActorExecutor = .shared,
        failureDecider: FailureDecider? = nil, tracksMailboxDepth: Bool = false,
        selfInvalidating: Bool = false
    ) {
        self.name = name
        self.mailbox = mailbox
        self.executor = executor
        self.failureDecider = failureDecider
        self.tracksMailboxDepth = tracksMailboxDepth
        self.selfInvalidating = selfInvalidating
    }

    public static var `default`: SpawnOptions { SpawnOptions() }

    /// Whether an actor spawned with these options needs no per-actor configuration (the
    /// common case, which `spawn` takes without a generic call into the runtime).
    @inlinable
    var needsNoCellConfig: Bool {
        guard name == nil, failureDecider == nil, !tracksMailboxDepth, !selfInvalidating else { return false }
        guard case .unbounded = mailbox, case .shared = executor else { return false }
        return true
    }
}
