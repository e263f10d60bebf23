import Troupe

/// Finds or creates the session actor of a user (its child: the observer shows the sessions under
/// the directory), and forgets it when it stops (death watch).
public struct SessionDirectory: ActorDefinition {
    public enum Message: Sendable {
        case session(user: String, Reply<ActorRef<Session.Message>>)
        case count(Reply<Int>)
        case ended(Terminated, user: String)
    }

    let prices: ActorPool<PriceBackend.Message>
    let activity: ActivityFeed
    let idleTimeout: Duration
    var sessions: [String: ActorRef<Session.Message>] = [:]

    public init(prices: ActorPool<PriceBackend.Message>, activity: ActivityFeed, idleTimeout: Duration) {
        self.prices = prices
        self.activity = activity
        self.idleTimeout = idleTimeout
    }

    public mutating func receive(_ message: Message, context: ActorContext<Message>) {
        switch message {
        case .session(let user, let reply):
            if let existing = sessions[user], !existing.isStopped {
                reply.succeed(existing)
                return
            }
            let session = context.spawn(
                Session(user: user, prices: prices, activity: activity, idleTimeout: idleTimeout),
                // A cart that fails one message keeps its items (and the page shows the failure).
                options: SpawnOptions(name: "session-\(user)", failureDecider: { _ in .resume }))
            sessions[user] = session
            context.watch(session) { .ended($0, user: user) }
            reply.succeed(session)
        case .count(let reply):
            reply.succeed(sessions.count)
        case .ended(let notice, let user):
            if sessions[user]?.address == notice.actor { sessions[user] = nil }
        }
    }
}
