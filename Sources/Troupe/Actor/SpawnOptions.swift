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

/// What to do after a handler failed (threw, or called ``ActorContext/crash(_:)``).
///
/// ```swift
/// SpawnOptions(failureDecider: { failure in
///     failure.failureCount < 5 ? .restart(after: .milliseconds(10), failingMessage: .retryOnce) : .stop
/// })
/// ```
public struct FailureDirective: Sendable, Hashable, CustomStringConvertible {
    /// What happens to the actor.
    public enum Action: Sendable, Hashable {
        /// Stop: the `stopped` hook runs, pending messages are dead-lettered, watchers are told.
        case stop
        /// Keep the instance and its state and go on with the next message.
        case resume
        /// Replace the instance with a fresh one from the spawn factory and go on with the
        /// pending mailbox (nothing after the failing message is lost).
        case restart
    }

    /// What happens to the message whose handler failed.
    public enum FailingMessage: Sendable, Hashable {
        /// It becomes a dead letter with reason ``DeadLetterReason/handlerFailed(_:)`` (default).
        case deadLetter
        /// After a restart, the fresh instance handles it first. If it fails again it is
        /// dead-lettered: a message is retried at most once.
        case retryOnce
    }

    public let action: Action
    /// For ``Action/restart``: how long the actor stays suspended (handling nothing, keeping
    /// its mailbox) before the fresh instance starts. Backoff policies set it.
    public let restartDelay: Duration
    /// For ``Action/restart``: the fate of the failing message.
    public let failingMessage: FailingMessage

    init(action: Action, restartDelay: Duration = .zero, failingMessage: FailingMessage = .deadLetter) {
        self.action = action
        self.restartDelay = max(.zero, restartDelay)
        self.failingMessage = action == .restart ? failingMessage : .deadLetter
    }

    /// Stop the actor (the default decider's answer).
    public static let stop = FailureDirective(action: .stop)
    /// Drop the failing message (dead letter) and go on with the same instance and state.
    public static let resume = FailureDirective(action: .resume)
    /// Restart at once from the spawn factory; the failing message is dead-lettered. Actors
    /// spawned from an instance, without a factory, stop instead.
    public static let restart = FailureDirective(action: .restart)

    /// Restart from the spawn factory after `delay` (the actor is suspended meanwhile, its
    /// mailbox kept), with the failing message dead-lettered or retried once.
    public static func restart(after delay: Duration = .zero, failingMessage: FailingMessage = .deadLetter) -> FailureDirective {
        FailureDirective(action: .restart, restartDelay: delay, failingMessage: failingMessage)
    }

    public var description: String {
        switch action {
        case .stop: return "stop"
        case .resume: return "resume"
        case .restart:
            if restartDelay == .zero && failingMessage == .deadLetter { return "restart" }
            return "restart(after: \(restartDelay), \(failingMessage == .retryOnce ? "retrying once" : "dead-lettering") the failing message)"
        }
    }
}

/// A handler failure, as given to a ``FailureDecider``.
public struct ActorFailure: Sendable, CustomStringConvertible {
    public let actor: ActorAddress
    public let error: any Error
    /// Failures of this actor so far, this one included (restarts do not reset it).
    public let failureCount: Int
    /// Whether the failing message was already a retry (``FailureDirective/FailingMessage/retryOnce``):
    /// it will be dead-lettered whatever the directive.
    public let wasRetry: Bool

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
    /// Stop the actor by itself once no ``ActorRef`` to it remains and its mailbox is empty
    /// (NNKit's self-invalidating object). Its `stopped` hook runs on the actor, with
    /// ``ActorContext/terminationReason`` `.selfInvalidated`, before it is released: the place
    /// to close files and connections. References the runtime holds (registry, timers, run
    /// queues) do not count; a ref stored anywhere else, including in the actor's own state,
    /// keeps it alive.
    public var selfInvalidating: Bool

    public init(name: String? = nil, mailbox: MailboxKind = .unbounded, executor: ActorExecutor = .shared,
                failureDecider: FailureDecider? = nil, tracksMailboxDepth: Bool = false,
                selfInvalidating: Bool = false) {
        self.name = name
        self.mailbox = mailbox
        self.executor = executor
        self.failureDecider = failureDecider
        self.tracksMailboxDepth = tracksMailboxDepth
        self.selfInvalidating = selfInvalidating
    }

    public static var `default`: SpawnOptions { SpawnOptions() }
}

/// An actor's identity: a number unique within its system and an optional name.
public struct ActorAddress: Sendable, Hashable, CustomStringConvertible {
    public let id: UInt64
    public let name: String?

    public var description: String { name.map { "\($0)#\(id)" } ?? "actor#\(id)" }
}
