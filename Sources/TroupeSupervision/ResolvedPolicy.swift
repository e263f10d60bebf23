import Troupe

/// A child's effective policy, fixed when it is supervised.
struct ResolvedPolicy: Sendable {
    let decider: SupervisionDecider
    let intensity: RestartIntensity
    let backoff: RestartBackoff
    let failingMessage: FailureDirective.FailingMessage
}
