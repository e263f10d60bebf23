/// The per-type forms of tell and ask, shared by refs and pools of ``HandlerActor``s: any
/// `Sendable` value is the message, and the handler registered for its type answers.
extension MessageTarget where Message == AnyMessage {
    /// Sends any value; the handler for its type handles it (in a pool: the chosen member's).
    @discardableResult
    public func tell<Payload: Sendable>(_ payload: Payload) -> TellOutcome {
        tell(AnyMessage(payload: payload, reply: nil))
    }

    /// Sends any value and waits for the handler's answer, of type `Value`.
    nonisolated(nonsending)
        public func ask<Payload: Sendable, Value: Sendable>(
            _ payload: Payload,
            returning: Value.Type = Value.self,
            timeout: Duration? = nil
        ) async throws(AskError) -> Value
    {
        try await ask(timeout: timeout) { (reply: Reply<Value>) in AnyMessage.request(payload, reply) }
    }

    /// Sends any value and calls `onReply` exactly once with the handler's answer (of type
    /// `Value`) or the ask's error, on the thread that completes the ask. No task is created.
    public func ask<Payload: Sendable, Value: Sendable>(
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil,
        onReply: @escaping @Sendable (Result<Value, AskError>) -> Void
    ) {
        ask(timeout: timeout, { (reply: Reply<Value>) in AnyMessage.request(payload, reply) }, onReply: onReply)
    }

    /// Sends any value and blocks the calling thread until the handler answers. Refused where it could deadlock, with
    /// ``AskError/blockingOnWorkerThread`` (see ``ActorRef/askBlocking(timeout:_:)``).
    public func askBlocking<Payload: Sendable, Value: Sendable>(
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil
    ) throws(AskError) -> Value {
        try askBlocking(timeout: timeout) { (reply: Reply<Value>) in AnyMessage.request(payload, reply) }
    }
}
