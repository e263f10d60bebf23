internal import CTroupe
import Synchronization

/// The state of one pending ask: completed exactly once, by the reply, the timeout, a failed
/// delivery or the reply being dropped, whichever comes first.
@usableFromInline
class AskStateBase: TimerEntry, @unchecked Sendable {  // set before publication, then guarded by `completed`
    @usableFromInline let completed = Atomic<Bool>(false)
    /// Cancellation of an awaiting ask (Dekker-style, both sequentially consistent): the
    /// awaiting task sets `installed` after storing its continuation and then reads
    /// `cancelRequested`; the cancelling thread sets `cancelRequested` and then reads
    /// `installed`. At least one of them sees the other and completes the ask. (Here, in the
    /// non-generic base, because a stored `Atomic` of a generic class costs a metadata lookup
    /// of `Atomic<Bool>` per ask when the class is instantiated.)
    @usableFromInline let installed = Atomic<Bool>(false)
    @usableFromInline let cancelRequested = Atomic<Bool>(false)
    /// The ask's time limit in nanoseconds, converted once (a `Duration`'s conversion costs
    /// a 128-bit division).
    let timeoutNanoseconds: Int64
    /// Where the subclass's `waiter` lives, in bytes from the object's start (set by its
    /// initialiser; see ``AskState/waiterSlot``).
    @usableFromInline let waiterOffset = Atomic<Int>(0)

    init(timeoutNanoseconds: Int64) { self.timeoutNanoseconds = timeoutNanoseconds }

    /// Asks are not taken out of the timer's heap when they complete (see
    /// ``DeadlineTimer/schedule(_:atNanoseconds:)``): a completed one is a dead entry.
    override var isDone: Bool { completed.load(ordering: .relaxed) }

    /// The request became a dead letter: fail the ask with the matching error.
    func failDelivery(_ reason: DeadLetterReason) {}

    /// The handler of the request threw: fail the ask with that error (unless answered).
    func failHandler(_ error: any Error) {}

    /// The ask's ``Reply`` was released unanswered: fail the ask (unless it completed
    /// otherwise meanwhile). Non-generic, so that `Reply`'s deinit needs no metadata.
    @usableFromInline
    func replyDropped() {}
}

/// Who waits for an ask's result.
@usableFromInline
enum AskWaiter<Completion> {
    /// Nobody (yet, for an awaiting ask before ``AskState/install(_:)``; or any more).
    case none
    /// A task awaiting the ask.
    case continuation(UnsafeContinuation<Completion, Never>)
    /// A callback (`onReply`, blocking asks, future reactions).
    case callback(@Sendable (Completion) -> Void)
    /// An actor, through ``AskState/deliverToActor(_:)`` (``ActorAskState``).
    case actor
}

/// The typed state of an ask.
///
/// Thread-safety: `waiter` is written before the state is shared (the continuation before
/// `installed` is set), and taken once, by the winner of `completed`. It is reached through
/// ``waiterSlot``, a pointer, because ``complete(_:)`` is inlinable: code compiled in another
/// module checks every access to a stored `var` of a class for exclusivity at run time
/// (about 150 instructions each), and `@exclusivity(unchecked)` does not reach it.
@usableFromInline
class AskState<Value: Sendable>: AskStateBase, @unchecked Sendable {  // see the contract above
    @usableFromInline typealias Completion = Result<Value, AskError>

    /// Taken (left `.none`) by the completer: a completed ask may wait in the timer's heap
    /// until it is purged, and must not keep what its callback captured (an actor's ref).
    @exclusivity(unchecked) private var waiter: AskWaiter<Completion>
    private let timeout: Duration

    @usableFromInline
    init(limit: AskLimit, waiter: AskWaiter<Completion>) {
        self.waiter = waiter
        self.timeout = limit.duration
        super.init(timeoutNanoseconds: limit.nanoseconds)
        recordWaiterOffset()
    }

    /// The one state that measures the layout (see ``recordWaiterOffset()``): records none.
    fileprivate init(layoutProbe limit: AskLimit) {
        self.waiter = .none
        self.timeout = limit.duration
        super.init(timeoutNanoseconds: limit.nanoseconds)
    }

    /// An awaiting ask; its continuation comes with ``install(_:)``.
    @usableFromInline
    convenience init(limit: AskLimit) { self.init(limit: limit, waiter: .none) }

    @usableFromInline
    convenience init(limit: AskLimit, callback: @escaping @Sendable (Completion) -> Void) {
        self.init(limit: limit, waiter: .callback(callback))
    }

    /// Hands the result to the asking actor (``ActorAskState`` overrides it).
    @usableFromInline
    func deliverToActor(_ result: Completion) { fatalError("subclass") }

    /// Records where `waiter` lives. The offset is the same for every `Value` (an
    /// ``AskWaiter`` holds a pointer or a closure whatever the result type), so it is measured
    /// once, on an `AskState<Int>`: measuring it here, in generic code, would look up the
    /// metadata of `AskWaiter<Result<Value, AskError>>` on every ask. Debug builds check it.
    private func recordWaiterOffset() {
        waiterOffset.store(askWaiterOffset, ordering: .relaxed)
        assert(measuredWaiterOffset() == askWaiterOffset, "AskState's waiter moved with its Value type")
    }

    fileprivate func measuredWaiterOffset() -> Int {
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
        return withUnsafeMutablePointer(to: &waiter) { UnsafeMutableRawPointer($0) - base }
    }

    /// The `waiter` field's address (an object never moves).
    @inlinable
    final var waiterSlot: UnsafeMutablePointer<AskWaiter<Completion>> {
        (UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque()) + waiterOffset.load(ordering: .relaxed))
            .assumingMemoryBound(to: AskWaiter<Completion>.self)
    }

    /// The awaiting task, before the request is sent. Returns false when the task was
    /// cancelled meanwhile: the ask is then completed with ``AskError/cancelled`` and the
    /// request must not be sent. Inlinable for the same reason as ``complete(_:)``.
    @inlinable
    final func install(_ continuation: UnsafeContinuation<Completion, Never>) -> Bool {
        waiterSlot.pointee = .continuation(continuation)
        installed.store(true, ordering: .sequentiallyConsistent)
        guard cancelRequested.load(ordering: .sequentiallyConsistent) else { return true }
        complete(.failure(.cancelled))
        return false
    }

    /// The awaiting task was cancelled (any thread): end the ask now; a late answer is dropped.
    @inlinable
    final func cancel() {
        cancelRequested.store(true, ordering: .sequentiallyConsistent)
        if installed.load(ordering: .sequentiallyConsistent) { complete(.failure(.cancelled)) }
    }

    /// Completes the ask if nobody did yet; returns whether this call did. Any thread.
    /// Inlinable, so that it is specialised for `Value` where the reply is sent (generic, it
    /// looked up `Result<Value, AskError>`'s metadata on every ask).
    @discardableResult
    @inlinable
    final func complete(_ result: Completion) -> Bool {
        guard completed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        // Not taken out of the timer's heap: the timer skips and purges completed asks (see
        // DeadlineTimer), which saves a lock and a heap removal per ask.
        let slot = waiterSlot
        let waiter = slot.move()
        slot.initialize(to: .none)
        switch waiter {
        case .continuation(let continuation): continuation.resume(returning: result)
        case .callback(let callback): callback(result)
        case .actor: deliverToActor(result)
        case .none: break
        }
        return true
    }

    override func fire() { complete(.failure(.timedOut(after: timeout))) }

    override func fireAtShutdown() { complete(.failure(.recipientStopped)) }

    override func replyDropped() {
        complete(.failure(CTroupe_is_releasing_stopped_actor() ? .recipientStopped : .noReply))
    }

    override func failHandler(_ error: any Error) { complete(.failure(AskError.wrapping(error))) }

    override func failDelivery(_ reason: DeadLetterReason) {
        complete(.failure(reason == .recipientStopped ? .recipientStopped : .undeliverable(reason)))
    }
}

/// An ask made by an actor (``ActorContext/ask(_:timeout:_:then:)``): the answer goes back to
/// it as a message. Its own class rather than a callback, so that the ask needs no closure
/// context (one allocation less per ask). `replyTo` and `map` are dropped once delivered, by
/// the completer (the winner of `completed`), since a completed ask may wait in the timer's
/// heap until it is purged.
@usableFromInline
final class ActorAskState<Value: Sendable, Message: Sendable>: AskState<Value>, @unchecked Sendable {  // see AskState
    /// A ref, not the cell: like any ref, it keeps a self-invalidating asker alive until the
    /// answer is in.
    @exclusivity(unchecked) private var replyTo: ActorRef<Message>?
    @exclusivity(unchecked) private var map: (@Sendable (Completion) -> Message)?
    /// The asker's context when the ask was made (a system that propagates contexts): the reply
    /// message carries it, so that the continuation runs in the asker's trace.
    @exclusivity(unchecked) private var context: (any Sendable)?

    @usableFromInline
    init(limit: AskLimit, replyTo: ActorRef<Message>, map: @escaping @Sendable (Completion) -> Message) {
        self.replyTo = replyTo
        self.map = map
        context = replyTo.cell.system.contextPropagation?.captureContext()
        super.init(limit: limit, waiter: .actor)
    }

    override func deliverToActor(_ result: Completion) {
        guard let replyTo, let map else { return }
        self.replyTo = nil
        self.map = nil
        let carried = context
        context = nil
        if replyTo.cell.system.contextPropagation == nil {
            _ = replyTo.tell(map(result))
        } else {
            _ = replyTo.cell.send(map(result), carrying: carried)
        }
    }
}

/// Where `AskState`'s `waiter` field lives (see `AskState.recordWaiterOffset`).
private let askWaiterOffset: Int = AskState<Int>(layoutProbe: AskLimit(duration: .zero, nanoseconds: 0))
    .measuredWaiterOffset()

/// An ask's time limit: the `Duration` (for the `.timedOut(after:)` error) and its nanoseconds
/// (for the timer), converted once per system for the default limit.
@usableFromInline
struct AskLimit: Sendable {
    let duration: Duration
    let nanoseconds: Int64
}
