internal import CTroupe
import Synchronization

/// The state of one pending ask: completed exactly once, by the reply, the timeout, a failed
/// delivery or the reply being dropped, whichever comes first.
@usableFromInline
class AskStateBase: TimerEntry, @unchecked Sendable {  // set before publication, then guarded by `completed`
    let completed = Atomic<Bool>(false)

    /// The request became a dead letter: fail the ask with the matching error.
    func failDelivery(_ reason: DeadLetterReason) {}

    /// The handler of the request threw: fail the ask with that error (unless answered).
    func failHandler(_ error: any Error) {}
}

/// The typed state of an ask.
///
/// Thread-safety: its fields are written before the state is shared (the continuation before
/// `installed` is set) and read once, by the winner of `completed`.
@usableFromInline
final class AskState<Value: Sendable>: AskStateBase, @unchecked Sendable {  // see the contract above
    @usableFromInline typealias Completion = Result<Value, AskError>

    private var continuation: UnsafeContinuation<Completion, Never>?
    private let callback: (@Sendable (Completion) -> Void)?
    private let timeout: Duration
    private let timer: DeadlineTimer?
    /// Cancellation of an awaiting ask (Dekker-style, both sequentially consistent): the
    /// awaiting task sets `installed` after storing its continuation and then reads
    /// `cancelRequested`; the cancelling thread sets `cancelRequested` and then reads
    /// `installed`. At least one of them sees the other and completes the ask.
    private let installed = Atomic<Bool>(false)
    private let cancelRequested = Atomic<Bool>(false)

    /// An awaiting ask; its continuation comes with ``install(_:)``.
    init(timeout: Duration, timer: DeadlineTimer) {
        self.continuation = nil
        self.callback = nil
        self.timeout = timeout
        self.timer = timer
    }

    @usableFromInline
    init(timeout: Duration, timer: DeadlineTimer?, callback: @escaping @Sendable (Completion) -> Void) {
        self.continuation = nil
        self.callback = callback
        self.timeout = timeout
        self.timer = timer
    }

    /// The awaiting task, before the request is sent. Returns false when the task was
    /// cancelled meanwhile: the ask is then completed with ``AskError/cancelled`` and the
    /// request must not be sent.
    func install(_ continuation: UnsafeContinuation<Completion, Never>) -> Bool {
        self.continuation = continuation
        installed.store(true, ordering: .sequentiallyConsistent)
        guard cancelRequested.load(ordering: .sequentiallyConsistent) else { return true }
        complete(.failure(.cancelled))
        return false
    }

    /// The awaiting task was cancelled (any thread): end the ask now; a late answer is dropped.
    func cancel() {
        cancelRequested.store(true, ordering: .sequentiallyConsistent)
        if installed.load(ordering: .sequentiallyConsistent) { complete(.failure(.cancelled)) }
    }

    /// Completes the ask if nobody did yet; returns whether this call did. Any thread.
    @discardableResult
    @usableFromInline
    func complete(_ result: Completion) -> Bool {
        guard completed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        timer?.cancel(self)
        if let continuation { continuation.resume(returning: result) } else { callback?(result) }
        return true
    }

    override func fire() { complete(.failure(.timedOut(after: timeout))) }

    override func fireAtShutdown() { complete(.failure(.recipientStopped)) }

    override func failHandler(_ error: any Error) { complete(.failure(AskError.wrapping(error))) }

    override func failDelivery(_ reason: DeadLetterReason) {
        complete(.failure(reason == .recipientStopped ? .recipientStopped : .undeliverable(reason)))
    }
}
