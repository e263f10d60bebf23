import Logging
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
    public static func restart(
        after delay: Duration = .zero, failingMessage: FailingMessage = .deadLetter
    ) -> FailureDirective {
        FailureDirective(action: .restart, restartDelay: delay, failingMessage: failingMessage)
    }

    public var description: String {
        switch action {
        case .stop: return "stop"
        case .resume: return "resume"
        case .restart:
            if restartDelay == .zero && failingMessage == .deadLetter { return "restart" }
            return
                "restart(after: \(restartDelay), \(failingMessage == .retryOnce ? "retrying once" : "dead-lettering") the failing message)"
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

    /// The failure as structured log metadata: `actor`, `error`, `failures`, `retry`.
    public var logMetadata: Logger.Metadata {
        [
            "actor": "\(actor)", "error": "\(error)", "failures": "\(failureCount)",
            "retry": "\(wasRetry)",
        ]
    }
}

/// Decides what happens after a failure; called on the failing actor's worker thread. This is
/// the extension point supervision plugs into.
public typealias FailureDecider = @Sendable (ActorFailure) -> FailureDirective
