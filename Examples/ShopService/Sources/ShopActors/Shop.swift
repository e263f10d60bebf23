import Troupe
import TroupePubSub
import TroupeSupervision

/// The shop's actors, assembled on one system under one supervisor (`shop`, restarting a child
/// that fails): the session directory, the price backend pool and the activity feed.
public struct Shop: Sendable {
    public let system: ActorSystem
    public let supervisor: Supervisor
    public let directory: ActorRef<SessionDirectory.Message>
    public let prices: ActorPool<PriceBackend.Message>
    public let activity: ActivityFeed

    /// `sessionIdleTimeout`: a session with no request for this long stops itself.
    public init(
        system: ActorSystem, backendLatency: Duration = .milliseconds(2), backendPoolSize: Int = 8,
        sessionIdleTimeout: Duration = .seconds(60)
    ) throws {
        self.system = system
        supervisor = Supervisor(system: system, strategy: .oneForOne(backoff: .exponential()), name: "shop")
        prices = try supervisor.supervisePool(id: "prices", size: backendPoolSize, routing: .leastLoaded) { _ in
            PriceBackend(latency: backendLatency)
        }
        activity = try ActivityFeed(supervisor: supervisor, pubsub: PubSub(system: system))
        directory = try supervisor.supervise(id: "sessions") { [prices, activity] in
            SessionDirectory(prices: prices, activity: activity, idleTimeout: sessionIdleTimeout)
        }
    }

    /// The session actor of `user` (made if needed).
    public func session(of user: String) async throws(AskError) -> ActorRef<Session.Message> {
        try await directory.ask { .session(user: user, $0) }
    }
}
