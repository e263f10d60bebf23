import Troupe
import TroupePubSub

/// The shop's actors, assembled on one system: the session directory, the price backend pool
/// and the activity feed.
public struct Shop: Sendable {
    public let system: ActorSystem
    public let directory: ActorRef<SessionDirectory.Message>
    public let prices: ActorPool<PriceBackend.Message>
    public let activity: ActivityFeed

    /// `sessionIdleTimeout`: a session with no request for this long stops itself.
    public init(
        system: ActorSystem, backendLatency: Duration = .milliseconds(2), backendPoolSize: Int = 8,
        sessionIdleTimeout: Duration = .seconds(60)
    ) throws {
        self.system = system
        prices = try system.spawnPool(size: backendPoolSize, routing: .leastLoaded, name: "prices") { _ in
            PriceBackend(latency: backendLatency)
        }
        activity = try ActivityFeed(system: system, pubsub: PubSub(system: system))
        directory = system.spawn(
            SessionDirectory(prices: prices, activity: activity, idleTimeout: sessionIdleTimeout),
            options: SpawnOptions(name: "sessions"))
    }

    /// The session actor of `user` (made if needed).
    public func session(of user: String) async throws(AskError) -> ActorRef<Session.Message> {
        try await directory.ask { .session(user: user, $0) }
    }
}
