internal import CTroupe

/// The three ways to wait for an ask, shared by ``ActorRef`` and ``ActorPool``: they differ only
/// in `send`, which delivers the request built around the ask's state (and arms its timeout).
enum Asking {
    /// Suspends until the ask completes (answer, error, timeout, drop or failed delivery).
    static func await<Value: Sendable>(
        _ system: ActorSystem, timeout: Duration?,
        send: (AskState<Value>, Duration) -> Void
    ) async throws(AskError) -> Value {
        let limit = timeout ?? system.configuration.askTimeout
        let result: Result<Value, AskError> = await withUnsafeContinuation { continuation in
            send(AskState<Value>(continuation: continuation, timeout: limit, timer: system.timer), limit)
        }
        return try result.get()
    }

    /// Calls `onReply` exactly once, on the thread that completes the ask.
    static func callback<Value: Sendable>(
        _ system: ActorSystem, timeout: Duration?,
        onReply: @escaping @Sendable (Result<Value, AskError>) -> Void,
        send: (AskState<Value>, Duration) -> Void
    ) {
        let limit = timeout ?? system.configuration.askTimeout
        send(AskState<Value>(timeout: limit, timer: system.timer, callback: onReply), limit)
    }

    /// Blocks the calling thread; refuses on a Troupe worker thread, where it could deadlock.
    static func blocking<Value: Sendable>(
        _ system: ActorSystem, timeout: Duration?,
        send: (AskState<Value>, Duration) -> Void
    ) throws(AskError) -> Value {
        if CTroupe_current_worker() != nil { throw .blockingOnWorkerThread }
        let waiter = ReplyWaiter<Value>()
        callback(system, timeout: timeout, onReply: { waiter.complete($0) }, send: send)
        return try waiter.wait().get()
    }
}
