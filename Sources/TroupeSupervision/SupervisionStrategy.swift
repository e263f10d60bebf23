import Troupe

/// How a ``Supervisor`` handles its children's failures.
///
/// ```swift
/// let strategy = SupervisionStrategy.allForOne(
///     intensity: RestartIntensity(maxRestarts: 3, within: .seconds(10), whenExceeded: .escalate),
///     backoff: .exponential(initial: .milliseconds(50), maximum: .seconds(5)),
///     failingMessage: .retryOnce
/// ) { error in
///     error is ProtocolViolation ? .stop : .restart
/// }
/// ```
///
/// The default: ``RestartScope/oneForOne``, always ``SupervisionDirective/restart``, at most
/// 10 restarts within 5 seconds and then stop, no backoff, the failing message dead-lettered.
public struct SupervisionStrategy: Sendable {
    /// Which children a restart or stop applies to.
    public var scope: RestartScope
    /// The restart budget of each child.
    public var intensity: RestartIntensity
    /// The delay before a failed child's fresh instance starts.
    public var backoff: RestartBackoff
    /// What happens to the message whose handler failed, on a restart: dead-lettered with
    /// reason `.handlerFailed` (default) or handled once more, first, by the fresh instance
    /// (dead-lettered if it fails again). With resume and stop it is always dead-lettered.
    public var failingMessage: FailureDirective.FailingMessage
    /// The decision function for children without one of their own (see ``ChildPolicy``).
    public var decider: SupervisionDecider

    public init(
        scope: RestartScope = .oneForOne,
        intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none,
        failingMessage: FailureDirective.FailingMessage = .deadLetter,
        decider: @escaping SupervisionDecider = { _ in .restart }
    ) {
        self.scope = scope
        self.intensity = intensity
        self.backoff = backoff
        self.failingMessage = failingMessage
        self.decider = decider
    }

    /// The default strategy (see the type's documentation).
    public static var `default`: SupervisionStrategy { SupervisionStrategy() }

    /// A failure affects only the failing child (and the actors linked to it).
    public static func oneForOne(
        intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none,
        failingMessage: FailureDirective.FailingMessage = .deadLetter,
        decider: @escaping SupervisionDecider = { _ in .restart }
    ) -> SupervisionStrategy {
        SupervisionStrategy(
            scope: .oneForOne, intensity: intensity, backoff: backoff, failingMessage: failingMessage, decider: decider)
    }

    /// A restart or stop decided for one child applies to every child.
    public static func allForOne(
        intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none,
        failingMessage: FailureDirective.FailingMessage = .deadLetter,
        decider: @escaping SupervisionDecider = { _ in .restart }
    ) -> SupervisionStrategy {
        SupervisionStrategy(
            scope: .allForOne, intensity: intensity, backoff: backoff, failingMessage: failingMessage, decider: decider)
    }

    /// A restart or stop decided for one child applies to it and to the children supervised
    /// after it.
    public static func restForOne(
        intensity: RestartIntensity = .default,
        backoff: RestartBackoff = .none,
        failingMessage: FailureDirective.FailingMessage = .deadLetter,
        decider: @escaping SupervisionDecider = { _ in .restart }
    ) -> SupervisionStrategy {
        SupervisionStrategy(
            scope: .restForOne, intensity: intensity, backoff: backoff, failingMessage: failingMessage, decider: decider
        )
    }
}
