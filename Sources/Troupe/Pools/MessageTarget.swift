/// Anything that accepts messages of one type: an ``ActorRef`` or an ``ActorPool``. Lets code
/// (a subscriber list, a router of routers) take either.
public protocol MessageTarget<Message>: Sendable {
    associatedtype Message: Sendable

    /// Sends without waiting; see ``ActorRef/tell(_:)``.
    @discardableResult
    func tell(_ message: consuming Message) -> TellOutcome

    /// Sends a request and waits for the answer; see ``ActorRef/ask(timeout:_:)``.
    nonisolated(nonsending)
        func ask<Value: Sendable>(
            timeout: Duration?, _ request: (Reply<Value>) -> Message
        ) async throws(AskError) -> Value

    /// Sends a request and calls `onReply` once with the result; see
    /// ``ActorRef/ask(timeout:_:onReply:)``.
    func ask<Value: Sendable>(
        timeout: Duration?, _ request: (Reply<Value>) -> Message,
        onReply: @escaping @Sendable (Result<Value, AskError>) -> Void)

    /// Blocks the calling (non-worker) thread until the answer arrives; see
    /// ``ActorRef/askBlocking(timeout:_:)``.
    func askBlocking<Value: Sendable>(
        timeout: Duration?, _ request: (Reply<Value>) -> Message
    ) throws(AskError) -> Value

    /// Stops the actor, or every member of a pool.
    func stop()
}

extension ActorRef: MessageTarget {}
extension ActorPool: MessageTarget {}

extension MessageTarget {
    /// ``ask(timeout:_:)`` with its outcome as a value: no `try`, and the error stays an
    /// ``AskError``. Swift 6 infers a closure around `try await ask` as `throws(any Error)`, so
    /// `Result { … }` and `Task { … }` lose the typed error; this form keeps it.
    ///
    /// ```swift
    /// switch await counter.askResult({ .get($0) }) {
    /// case .success(let total): print(total)
    /// case .failure(.timedOut): retryLater()
    /// case .failure(let error): print(error)
    /// }
    /// ```
    nonisolated(nonsending)
        public func askResult<Value: Sendable>(
            timeout: Duration? = nil,
            _ request: (Reply<Value>) -> Message
        ) async -> Result<Value, AskError>
    {
        do { return .success(try await ask(timeout: timeout, request)) } catch { return .failure(error) }
    }

    /// ``askBlocking(timeout:_:)`` with its outcome as a value (see ``askResult(timeout:_:)``).
    public func askBlockingResult<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message
    ) -> Result<Value, AskError> {
        do { return .success(try askBlocking(timeout: timeout, request)) } catch { return .failure(error) }
    }
}

extension MessageTarget where Message == AnyMessage {
    /// The per-type ask with its outcome as a value (see ``MessageTarget/askResult(timeout:_:)``).
    nonisolated(nonsending)
        public func askResult<Payload: Sendable, Value: Sendable>(
            _ payload: Payload,
            returning: Value.Type = Value.self,
            timeout: Duration? = nil
        ) async -> Result<Value, AskError>
    {
        do { return .success(try await ask(payload, returning: Value.self, timeout: timeout)) } catch {
            return .failure(error)
        }
    }
}
