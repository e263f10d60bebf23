/// A handler failure the system kept: the last ``ActorSystem/recentFailureLimit`` of the whole
/// system, for people's views (TroupeObserver shows them, and a selected actor's own), read with
/// ``ActorSystem/recentFailures``. Failures are counted per actor for good
/// (``ActorSnapshot/failures``); these are the latest few, with what they were.
public struct RecentFailure: Sendable, Hashable {
    /// The actor whose handler failed.
    public let actor: ActorAddress
    /// The error, as `String(describing:)` gives it.
    public let error: String
    /// What its failure decider decided.
    public let action: FailureDirective.Action
    /// When, on the system's clock (``ActorSystem/uptime``).
    public let at: Duration
    /// The actor's failures so far, this one included (its supervision count: a restart keeps it).
    public let failureCount: Int
}

extension RecentFailure: CustomStringConvertible {
    /// `orders#12 failed (restart) at 12.5 s: Timeout`
    public var description: String {
        "\(actor) failed (\(action)) at \(LatencyHistogram.format(at)): \(error)"
    }
}

extension ActorSystem {
    /// How many failures ``recentFailures`` keeps.
    public static let recentFailureLimit = 64

    /// The system's last handler failures, oldest first (at most ``recentFailureLimit``): each
    /// failing actor, the error, the decision and when. Kept as failures happen (a lock and a
    /// string per failure, nothing per message). Any thread.
    public var recentFailures: [RecentFailure] { introspector.recentFailures }
}
