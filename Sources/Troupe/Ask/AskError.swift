/// Why an ``ActorRef/ask(timeout:_:)`` did not return a value.
public enum AskError: Error, Sendable, CustomStringConvertible {
    /// No reply within the timeout.
    case timedOut(after: Duration)
    /// The target was stopped (or stopped before handling the request).
    case recipientStopped
    /// The handler let go of the ``Reply`` without answering.
    case noReply
    /// The request could not be delivered (bounded mailbox full, unhandled type, shutdown).
    case undeliverable(DeadLetterReason)
    /// The handler answered with an error, or a module on the way to it failed the request
    /// with its own (a cluster's entity region: the request could not be encoded, delivered or
    /// answered across the nodes). ``rootCause`` is that error.
    case failed(any Error)
    /// The handler answered with a value of another type than the asker expected.
    case typeMismatch(expected: String, actual: String)
    /// `askBlocking` was called where waiting could deadlock: on a shared Troupe worker thread,
    /// or by a dedicated-thread actor asking itself.
    case blockingOnWorkerThread
    /// The awaiting task was cancelled. A request already sent stays sent (the target may
    /// still handle it); its answer is discarded.
    case cancelled

    /// An error for a failed ask: `error` itself when it is already an ``AskError``, else
    /// ``failed(_:)`` wrapping it.
    static func wrapping(_ error: any Error) -> AskError {
        (error as? AskError) ?? .failed(error)
    }

    /// The error at the root of this one: for ``failed(_:)`` the handler's error (unwrapping
    /// nested ``failed(_:)`` from asks forwarded through several actors), else `self`.
    public var rootCause: any Error {
        var current: any Error = self
        while case .failed(let inner)? = current as? AskError { current = inner }
        return current
    }

    public var description: String {
        switch self {
        case .timedOut(let after): "ask timed out after \(after); the target is slow, blocked or never replies"
        case .recipientStopped: "ask failed: the target actor is stopped"
        case .noReply: "ask failed: the handler dropped its Reply without answering"
        case .undeliverable(let reason): "ask failed: the request became a dead letter (\(reason))"
        case .failed(let error): "ask failed with an error (the handler's, or the request's on its way): \(error)"
        case .typeMismatch(let expected, let actual): "ask failed: expected a reply of type \(expected), got \(actual)"
        case .blockingOnWorkerThread:
            "askBlocking called where it could deadlock (a shared Troupe worker thread, or a dedicated actor asking itself); use `try await ask` or context.ask inside actors"
        case .cancelled: "ask cancelled: the awaiting task was cancelled (a request already sent may still be handled)"
        }
    }
}
