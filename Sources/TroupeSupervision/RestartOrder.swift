import Troupe

/// A restart to order, as planned under the lock.
struct RestartOrder: Sendable {
    let reason: any Error
    /// The backoff every actor of the restarted group waits; the failing message's fate (for the origin).
    let originDelay: Duration
    let failingMessage: FailureDirective.FailingMessage
}
