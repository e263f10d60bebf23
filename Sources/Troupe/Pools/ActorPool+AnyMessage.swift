internal import TroupeLocks
import Synchronization
internal import CTroupe

extension ActorPool: CustomStringConvertible {
    public var description: String { "ActorPool<\(Message.self)>(\(name), \(size) members, \(routing))" }
}

extension ActorPool where Message == AnyMessage {
    /// Sends any value to every member.
    @discardableResult
    public func broadcast<Payload: Sendable>(_ payload: Payload) -> Int {
        broadcast(AnyMessage(payload: payload, reply: nil))
    }

    /// Sends any value to every member and returns their answers in member order.
    nonisolated(nonsending)
        public func askAll<Payload: Sendable, Value: Sendable>(
            _ payload: Payload,
            returning: Value.Type = Value.self,
            timeout: Duration? = nil
        ) async -> [Result<Value, AskError>]
    {
        await askAll(timeout: timeout) { (reply: Reply<Value>) in AnyMessage.request(payload, reply) }
    }
}
