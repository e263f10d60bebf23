import Troupe

/// Per-child overrides of the supervisor's ``SupervisionStrategy`` (`nil`: the strategy's).
/// The scope is the supervisor's: it relates children to each other.
///
/// ```swift
/// try supervisor.supervise(id: "parser", policy: ChildPolicy(decider: { $0 is MalformedInput ? .resume : .restart })) {
///     Parser()
/// }
/// ```
public struct ChildPolicy: Sendable {
    public var decider: SupervisionDecider?
    public var intensity: RestartIntensity?
    public var backoff: RestartBackoff?
    public var failingMessage: FailureDirective.FailingMessage?

    public init(
        decider: SupervisionDecider? = nil,
        intensity: RestartIntensity? = nil,
        backoff: RestartBackoff? = nil,
        failingMessage: FailureDirective.FailingMessage? = nil
    ) {
        self.decider = decider
        self.intensity = intensity
        self.backoff = backoff
        self.failingMessage = failingMessage
    }

    /// Everything from the supervisor's strategy.
    public static var inherited: ChildPolicy { ChildPolicy() }

    func resolved(with strategy: SupervisionStrategy) -> ResolvedPolicy {
        ResolvedPolicy(
            decider: decider ?? strategy.decider,
            intensity: intensity ?? strategy.intensity,
            backoff: backoff ?? strategy.backoff,
            failingMessage: failingMessage ?? strategy.failingMessage)
    }
}
