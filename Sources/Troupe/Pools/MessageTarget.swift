/// Anything that accepts messages of one type: an ``ActorRef`` or an ``ActorPool``. Lets code
/// (a subscriber list, a router of routers) take either.
public protocol MessageTarget<Message>: Sendable {
    associatedtype Message: Sendable

    /// Sends without waiting; see ``ActorRef/tell(_:)``.
    @discardableResult
    func tell(_ message: consuming Message) -> TellOutcome

    /// Sends a request and waits for the answer; see ``ActorRef/ask(timeout:_:)``.
    func ask<Value: Sendable>(timeout: Duration?, _ request: (Reply<Value>) -> Message) async throws(AskError) -> Value

    /// Sends a request and calls `onReply` once with the result; see
    /// ``ActorRef/ask(timeout:_:onReply:)``.
    func ask<Value: Sendable>(timeout: Duration?, _ request: (Reply<Value>) -> Message,
                              onReply: @escaping @Sendable (Result<Value, AskError>) -> Void)

    /// Blocks the calling (non-worker) thread until the answer arrives; see
    /// ``ActorRef/askBlocking(timeout:_:)``.
    func askBlocking<Value: Sendable>(timeout: Duration?, _ request: (Reply<Value>) -> Message) throws(AskError) -> Value

    /// Stops the actor, or every member of a pool.
    func stop()
}

extension ActorRef: MessageTarget {}
extension ActorPool: MessageTarget {}
