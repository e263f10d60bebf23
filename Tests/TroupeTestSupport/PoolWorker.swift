import Troupe

/// A pool member that records who handled what.
public struct PoolWorker: ActorDefinition {
    public enum Message: Sendable {
        /// Records (member, id).
        case job(Int)
        /// Records (member, id), then holds the worker thread until the gate opens.
        case hold(Int, Gate)
        /// Answers with the member's index.
        case whoAmI(Reply<Int>)
        /// Answers with the member's label.
        case label(Reply<String>)
        /// Answers with the number of jobs handled.
        case handled(Reply<Int>)
        /// Throws.
        case fail
        /// Keeps the reply without answering (for timeouts).
        case keep(Reply<Int>)
        /// Records (member, id) keyed for hashing.
        case keyed(key: String, id: Int)
        /// Answers with the member's index; routed by `key` in hashing tests.
        case route(key: UInt64, Reply<Int>)
    }

    public struct Failure: Error {}

    public var index: Int
    public var label = ""
    var log: Recorder<Handled>?
    var count = 0
    var kept: [Reply<Int>] = []

    public init(index: Int, log: Recorder<Handled>? = nil) {
        self.index = index
        self.log = log
    }

    public mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        switch message {
        case .job(let id), .keyed(_, let id):
            count += 1
            log?.append(Handled(member: index, id: id))
        case .hold(let id, let gate):
            count += 1
            log?.append(Handled(member: index, id: id))
            gate.enter()
        case .whoAmI(let reply), .route(_, let reply): reply.succeed(index)
        case .label(let reply): reply.succeed(label)
        case .handled(let reply): reply.succeed(count)
        case .fail: throw Failure()
        case .keep(let reply): kept.append(reply)
        }
    }
}

/// A message a ``PoolWorker`` handled: which member, which id.
public struct Handled: Sendable, Hashable {
    public let member: Int
    public let id: Int
}
