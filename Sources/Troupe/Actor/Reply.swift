import Synchronization

/// The state of one pending ask: completed exactly once, by the reply, the timeout, a failed
/// delivery or the reply being dropped, whichever comes first.
class AskStateBase: TimerEntry, @unchecked Sendable {  // subclass state is set before publication, then guarded by `completed`
    let completed = Atomic<Bool>(false)

    /// The request became a dead letter: fail the ask with the matching error.
    func failDelivery(_ reason: DeadLetterReason) {}

    /// The handler of the request threw: fail the ask with that error (unless answered).
    func failHandler(_ error: any Error) {}
}

final class AskState<Value: Sendable>: AskStateBase, @unchecked Sendable {  // fields are written before the state is shared and read once, by the winner of `completed`
    typealias Completion = Result<Value, AskError>

    private let continuation: UnsafeContinuation<Completion, Never>?
    private let callback: (@Sendable (Completion) -> Void)?
    private let timeout: Duration
    private let timer: DeadlineTimer?

    init(continuation: UnsafeContinuation<Completion, Never>, timeout: Duration, timer: DeadlineTimer) {
        self.continuation = continuation
        self.callback = nil
        self.timeout = timeout
        self.timer = timer
    }

    init(timeout: Duration, timer: DeadlineTimer?, callback: @escaping @Sendable (Completion) -> Void) {
        self.continuation = nil
        self.callback = callback
        self.timeout = timeout
        self.timer = timer
    }

    /// Completes the ask if nobody did yet; returns whether this call did. Any thread.
    @discardableResult
    func complete(_ result: Completion) -> Bool {
        guard completed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        timer?.cancel(self)
        if let continuation { continuation.resume(returning: result) } else { callback?(result) }
        return true
    }

    override func fire() { complete(.failure(.timedOut(after: timeout))) }

    override func fireAtShutdown() { complete(.failure(.recipientStopped)) }

    override func failHandler(_ error: any Error) { complete(.failure(.failed(error))) }

    override func failDelivery(_ reason: DeadLetterReason) {
        complete(.failure(reason == .recipientStopped ? .recipientStopped : .undeliverable(reason)))
    }
}

/// The answer slot of an ask, carried inside the request message.
///
/// Complete it once with ``succeed(_:)`` or ``fail(_:)``, now or later, from any thread. A
/// second completion is ignored and reported by the `Bool` result. Dropping the last reference
/// without completing it fails the ask at once with ``AskError/noReply``, so an asker never
/// waits for the timeout because a handler forgot to answer.
public final class Reply<Value: Sendable>: Sendable {
    let state: AskState<Value>

    init(_ state: AskState<Value>) { self.state = state }

    /// Answers the ask. Returns false when it was already completed (answered, timed out or
    /// failed) and this value was discarded.
    @discardableResult
    public func succeed(_ value: Value) -> Bool { state.complete(.success(value)) }

    /// Fails the ask with `error` (the asker sees ``AskError/failed(_:)``).
    @discardableResult
    public func fail(_ error: any Error) -> Bool { state.complete(.failure(.failed(error))) }

    /// Answers with the outcome of `body`.
    @discardableResult
    public func complete(with body: () throws -> Value) -> Bool {
        do { return succeed(try body()) } catch { return fail(error) }
    }

    /// Whether the ask is completed (by anyone).
    public var isCompleted: Bool { state.completed.load(ordering: .acquiring) }

    deinit { state.complete(.failure(.noReply)) }
}

extension Reply where Value == Void {
    @discardableResult
    public func succeed() -> Bool { succeed(()) }
}
