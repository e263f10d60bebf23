import Synchronization

/// The answer slot of an ask, carried inside the request message.
///
/// Complete it once with ``succeed(_:)`` or ``fail(_:)``, now or later, from any thread. A
/// second completion is ignored and reported by the `Bool` result. Dropping the last reference
/// without completing it fails the ask at once with ``AskError/noReply``, so an asker never
/// waits for the timeout because a handler forgot to answer.
public final class Reply<Value: Sendable>: Sendable {
    @usableFromInline let state: AskState<Value>

    @usableFromInline init(_ state: AskState<Value>) { self.state = state }

    /// Answers the ask. Returns false when it was already completed (answered, timed out or
    /// failed) and this value was discarded.
    @discardableResult
    @inlinable
    public func succeed(_ value: Value) -> Bool { state.complete(.success(value)) }

    /// Fails the ask with `error`: the asker sees ``AskError/failed(_:)`` wrapping it, or the
    /// ``AskError`` itself when `error` is one (an ask that failed further down a chain of
    /// actors reaches the first asker as it was, not wrapped once per hop).
    @discardableResult
    public func fail(_ error: any Error) -> Bool { state.complete(.failure(AskError.wrapping(error))) }

    /// Answers with the outcome of `body`.
    @discardableResult
    public func complete(with body: () throws -> Value) -> Bool {
        do { return succeed(try body()) } catch { return fail(error) }
    }

    /// Whether the ask is completed (by anyone).
    public var isCompleted: Bool { state.completed.load(ordering: .acquiring) }

    /// Dropped unanswered: `.recipientStopped` when it goes with the instance of an actor that
    /// stopped, `.noReply` otherwise.
    ///
    /// An answered reply returns at once: building the failure (a generic `Result`) would cost a
    /// generic-metadata lookup in the runtime on every ask.
    deinit {
        if state.completed.load(ordering: .acquiring) { return }
        state.replyDropped()
    }
}

extension Reply {
    /// A reply whose answer goes to `onCompletion` instead of an asker in this system: the
    /// bridge for requests that arrive from elsewhere (another node of a cluster, a callback
    /// API) and must reach an actor as an ordinary message that carries a `Reply`.
    ///
    /// `onCompletion` runs exactly once, on the thread that completes the reply: with the
    /// value, with the failure given to ``fail(_:)``, or with ``AskError/noReply`` (or
    /// ``AskError/recipientStopped``) when the reply is dropped unanswered. No time limit
    /// applies here: whoever waits for the outcome bounds the wait.
    public convenience init(onCompletion: @escaping @Sendable (Result<Value, AskError>) -> Void) {
        self.init(AskState<Value>(limit: AskLimit(duration: .zero, nanoseconds: 0), callback: onCompletion))
    }
}

extension Reply where Value == Void {
    @discardableResult
    public func succeed() -> Bool { succeed(()) }
}
