import Troupe

/// One user's cart: created on demand by the ``SessionDirectory``, and stopped by itself once it
/// has been idle for `idleTimeout` (its directory watches it and forgets it then).
public struct Session: ActorDefinition {
    public enum Message: Sendable {
        case add(item: String)
        case remove(item: String)
        case items(Reply<[String]>)
        /// Prices every item through the backend pool and empties the cart; answers the total.
        case checkout(Reply<Receipt>)
        case priced([String], Result<[Int], AskError>, Reply<Receipt>)
        case idleCheck
        /// An operator's test of the failure path (`fail REASON` on the observer's page): the
        /// handler throws ``SessionFault``; the directory's decider resumes the cart, items kept.
        case fail(reason: String)
    }

    public let user: String
    let prices: ActorPool<PriceBackend.Message>
    let activity: ActivityFeed
    let idleTimeout: Duration
    var items: [String] = []
    var touched = ContinuousClock.now

    public init(user: String, prices: ActorPool<PriceBackend.Message>, activity: ActivityFeed, idleTimeout: Duration) {
        self.user = user
        self.prices = prices
        self.activity = activity
        self.idleTimeout = idleTimeout
    }

    public mutating func started(context: ActorContext<Message>) {
        context.startPeriodicTimer(key: "idle", message: .idleCheck, every: idleTimeout / 2)
    }

    public mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        if case .idleCheck = message {
            if ContinuousClock.now - touched >= idleTimeout { context.stop() }
            return
        }
        touched = .now
        switch message {
        case .add(let item):
            items.append(item)
            activity.publish(CartChange(user: user, item: item, kind: .added))
        case .remove(let item):
            if let index = items.firstIndex(of: item) {
                items.remove(at: index)
                activity.publish(CartChange(user: user, item: item, kind: .removed))
            }
        case .items(let reply):
            reply.succeed(items)
        case .checkout(let reply):
            let bought = items
            // Each item priced by the pool, in parallel; the answers come back as one message.
            let prices = self.prices
            context.run({
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for item in bought { group.addTask { try await prices.ask { .price(of: item, $0) } } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }) { result in .priced(bought, result.mapError { $0 as? AskError ?? .failed($0) }, reply) }
        case .priced(let bought, let result, let reply):
            switch result {
            case .success(let prices):
                // What was priced leaves the cart; items added meanwhile stay for the next checkout.
                let receipt = Receipt(user: user, items: bought, totalCents: prices.reduce(0, +))
                items.removeFirst(min(bought.count, items.count))
                activity.publish(CartChange(user: user, item: nil, kind: .checkedOut))
                reply.succeed(receipt)
            case .failure(let error):
                reply.fail(error)
            }
        case .fail(let reason):
            throw SessionFault(reason: reason)
        case .idleCheck:
            break
        }
    }
}

/// What a session's `fail` message throws: the failure an operator asked for.
public struct SessionFault: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { "SessionFault: \(reason)" }
}

/// What a checkout answers.
public struct Receipt: Sendable, Codable, Equatable {
    public let user: String
    public let items: [String]
    public let totalCents: Int
}

/// Operators can read a cart on the observer's page and put an item in it from there.
extension Session: InspectableActor {
    public func inspectionDescription() -> String {
        items.isEmpty ? "\(user)'s cart is empty" : "\(user)'s cart: \(items.joined(separator: ", "))"
    }

    /// `add ITEM`, `remove ITEM` or `fail REASON`; nothing else.
    public static func testMessage(from text: String) -> Message? {
        let words = text.split(separator: " ", maxSplits: 1).map(String.init)
        guard words.count == 2, !words[1].isEmpty else { return nil }
        switch words[0] {
        case "add": return .add(item: words[1])
        case "remove": return .remove(item: words[1])
        case "fail": return .fail(reason: words[1])
        default: return nil
        }
    }
}
