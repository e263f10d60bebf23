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

/// What to do after a handler threw.
public enum FailureDirective: Sendable, Hashable {
    /// Stop the actor: its `stopped` hook runs and pending messages are dead-lettered (default).
    case stop
    /// Drop the failing message and go on with the same instance and state.
    case resume
    /// Replace the instance with a fresh one from the spawn factory (its `started` hook runs)
    /// and go on with the pending mailbox. Actors spawned from an instance, without a factory,
    /// stop instead.
    case restart
}

/// A handler failure, as given to a ``FailureDecider``.
public struct ActorFailure: Sendable, CustomStringConvertible {
    public let actor: ActorAddress
    public let error: any Error
    /// Failures of this actor so far, this one included.
    public let failureCount: Int

    public var description: String { "\(actor) failed (#\(failureCount)): \(error)" }
}

/// Decides what happens after a failure; called on the failing actor's worker thread. This is
/// the extension point supervision plugs into.
public typealias FailureDecider = @Sendable (ActorFailure) -> FailureDirective

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

    public init(name: String? = nil, mailbox: MailboxKind = .unbounded, executor: ActorExecutor = .shared,
                failureDecider: FailureDecider? = nil, tracksMailboxDepth: Bool = false) {
        self.name = name
        self.mailbox = mailbox
        self.executor = executor
        self.failureDecider = failureDecider
        self.tracksMailboxDepth = tracksMailboxDepth
    }

    public static var `default`: SpawnOptions { SpawnOptions() }
}

/// An actor's identity: a number unique within its system and an optional name.
public struct ActorAddress: Sendable, Hashable, CustomStringConvertible {
    public let id: UInt64
    public let name: String?

    public var description: String { name.map { "\($0)#\(id)" } ?? "actor#\(id)" }
}
