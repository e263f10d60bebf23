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
    /// ``HandOffPhase`` of an ask whose request the asking thread may run in place (see
    /// ``AskState/completeHandOff(_:)``); 0 for every other ask. Declared here, after the three
    /// flags, so that it takes no room of its own.
    @usableFromInline let handOffPhase = Atomic<UInt8>(HandOffPhase.none.rawValue)
    /// The ask's time limit in nanoseconds, converted once (a `Duration`'s conversion costs
    /// a 128-bit division).
    let timeoutNanoseconds: Int64
    /// Where the subclass's `waiter` lives, in bytes from the object's start (set by its
    /// initialiser; see ``AskState/waiterSlot``).
    @usableFromInline let waiterOffset = Atomic<Int>(0)
    /// A hand-off ask's continuation, once its task waits (``HandOffPhase/waiting``), as the
    /// word of ``ParkedContinuation``.
    @usableFromInline let parkedContinuation = Atomic<UInt>(0)
    /// Room for a hand-off ask's result (``depositCapacity`` bytes at ``depositOffset``),
    /// written by its completer and moved out by the asking thread through raw pointers, by
    /// code specialised for the result type. Raw words rather than a typed field: a field whose
    /// layout depends on `Value` would make the generic class's initialiser and deinit look up
    /// its metadata on every ask (measured: ~1,400 instructions). Ends the base's fields on a
    /// 16-byte boundary, so that the subclass's `waiter` starts at the same offset for every
    /// `Value` (see ``AskState/recordWaiterOffset()``).
    @exclusivity(unchecked) private var depositStorage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0)

    /// Where ``depositStorage`` lives, in bytes from the object's start (checked in debug
    /// builds by the initialiser).
    @inlinable static var depositOffset: Int { 64 }
    /// How many bytes ``depositStorage`` holds: an ask whose `Result<Value, AskError>` is larger
    /// (or aligned beyond 8 bytes) is never handed off.
    @inlinable static var depositCapacity: Int { 48 }

    /// Whether a hand-off ask's result fits ``depositStorage``.
    @inlinable
    static func canDeposit<Completion>(_ type: Completion.Type) -> Bool {
        MemoryLayout<Completion>.size <= depositCapacity && MemoryLayout<Completion>.alignment <= 8
    }

    /// The deposit room's address (the object never moves).
    @inlinable
    final var depositRoom: UnsafeMutableRawPointer {
        // Safety: the caller holds the ask while it uses the room; an object never moves, and
        // `depositStorage` starts at `depositOffset` (checked by `init` in debug builds).
        UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque()) + AskStateBase.depositOffset
    }

    init(timeoutNanoseconds: Int64) {
        self.timeoutNanoseconds = timeoutNanoseconds
        super.init()
        assert(measuredDepositOffset() == AskStateBase.depositOffset, "AskStateBase's deposit room moved")
    }

    private func measuredDepositOffset() -> Int {
        // Safety: only addresses are subtracted, nothing is read or written; `depositStorage` is a private
        // stored property accessed directly, so the pointer is its place inside this object.
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
        return withUnsafeMutablePointer(to: &depositStorage) { UnsafeMutableRawPointer($0) - base }
    }

    /// Spins until a completer that won a hand-off ask's phase has deposited its result.
    @usableFromInline
    final func waitForDeposit() {
        while handOffPhase.load(ordering: .acquiring) != HandOffPhase.deposited.rawValue { CTroupe_cpu_relax() }
    }

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

/// Where a hand-off ask stands (``AskStateBase/handOffPhase``): the asking thread ran, or tried
/// to run, the target's turn in place, and no continuation existed when the request was sent.
///
/// `none` for every other ask. A hand-off ask starts `running` (set before the request is
/// sent). Exactly one of two compare-and-swaps leaves `running`: the completer's (the winner of
/// `completed`) to `depositing`, then `deposited` once the result is in the deposit room; or
/// the asking task's, to `waiting`, after it stored its continuation in
/// ``AskStateBase/parkedContinuation``, which the completer then resumes. Whoever loses knows
/// what the winner did: a completer that finds `waiting` resumes the continuation; a task that
/// finds `depositing` waits (a few instructions) for `deposited` and takes the result.
@usableFromInline
enum HandOffPhase: UInt8 {
    case none = 0
    case running = 1
    case depositing = 2
    case waiting = 3
    case deposited = 4
}

/// An `UnsafeContinuation` kept in an atomic word (``AskStateBase/parkedContinuation``): the
/// continuation is one pointer to the suspended task's context, and the word is written once by
/// the task and read once by the completer, ordered by ``HandOffPhase``'s compare-and-swaps.
@usableFromInline
enum ParkedContinuation {
    @inlinable
    static func word<T>(_ continuation: UnsafeContinuation<T, Never>) -> UInt {
        // Safety: an UnsafeContinuation is a single raw pointer (checked by the size test in
        // debug builds); the word is turned back into the same type by `continuation(_:)`.
        assert(MemoryLayout<UnsafeContinuation<T, Never>>.size == MemoryLayout<UInt>.size)
        return unsafeBitCast(continuation, to: UInt.self)
    }

    @inlinable
    static func continuation<T>(_ word: UInt, as type: T.Type) -> UnsafeContinuation<T, Never> {
        // Safety: `word` was made by `word(_:)` from an UnsafeContinuation<T, Never> of the same
        // ask (so of the same T), and is resumed exactly once (by the winner of `completed`).
        unsafeBitCast(word, to: UnsafeContinuation<T, Never>.self)
    }
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
        // Safety: only addresses are subtracted, nothing is read or written; `waiter` is a private stored
        // property accessed directly, so the pointer is its place inside this object.
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
        return withUnsafeMutablePointer(to: &waiter) { UnsafeMutableRawPointer($0) - base }
    }

    /// The `waiter` field's address (an object never moves).
    @inlinable
    final var waiterSlot: UnsafeMutablePointer<AskWaiter<Completion>> {
        // Safety: `waiterOffset` is where `init` placed `waiter`, an initialised `AskWaiter<Completion>`
        // (the offset is the same for every `Value`: checked in debug builds); the caller holds the ask.
        (UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque()) + waiterOffset.load(ordering: .relaxed))
            .assumingMemoryBound(to: AskWaiter<Completion>.self)
    }

    /// The awaiting task, before the request is sent. Returns false when the task was
    /// cancelled meanwhile: the ask is then completed with ``AskError/cancelled`` and the
    /// request must not be sent. Inlinable for the same reason as ``complete(_:)``.
    @inlinable
    final func install(_ continuation: UnsafeContinuation<Completion, Never>) -> Bool {
        // Safety: nobody else reaches `waiter` yet: the request (and its timeout) go out after this call,
        // and `cancel` completes the ask only once it sees `installed`, which is set after this write.
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
    final func complete(_ result: consuming Completion) -> Bool {
        guard completed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        // Not taken out of the timer's heap: the timer skips and purges completed asks (see
        // DeadlineTimer), which saves a lock and a heap removal per ask.
        if _slowPath(handOffPhase.load(ordering: .relaxed) != HandOffPhase.none.rawValue) {
            completeHandOff(result)
            return true
        }
        // Safety: only the winner of `completed` gets here, so the waiter is moved out once (and the slot
        // re-initialised at once); its only write, `init` or `install`, happened before that win.
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

    /// The asking task, resumed: orders after this point everything the completer did before
    /// it won `completed` (a releasing exchange), as ThreadSanitizer can see. The resumption
    /// itself orders it too, but inside the Swift runtime, which TSan does not instrument: it
    /// reported the asker's first use of what the reply carried (a child the replier had just
    /// spawned: the cell's `system`, written in its `init`) as a race. An acquiring load is a
    /// plain load on x86 and one `ldar` on arm64.
    @inlinable @inline(__always)
    final func observeCompletion() {
        _ = completed.load(ordering: .acquiring)
    }

    // MARK: Hand-off (see ``HandOffPhase``)

    /// Marks an awaiting ask whose request the asking thread may run in place. Before the
    /// request is sent (the send publishes it). Only when ``AskStateBase/canDeposit(_:)``.
    @inlinable
    final func beginHandOff() {
        handOffPhase.store(HandOffPhase.running.rawValue, ordering: .relaxed)
    }

    /// The completer's side of a hand-off ask (the winner of `completed`): deposits the result
    /// for the asking thread, or resumes the task that waits already.
    @inlinable
    final func completeHandOff(_ result: consuming Completion) {
        if handOffPhase.compareExchange(
            expected: HandOffPhase.running.rawValue, desired: HandOffPhase.depositing.rawValue,
            ordering: .acquiringAndReleasing
        ).exchanged {
            // Safety: the room is `depositCapacity` raw bytes, aligned to 8, that nothing else
            // uses; `beginHandOff` is only called when `Completion` fits (`canDeposit`).
            depositRoom.initializeMemory(as: Completion.self, to: result)
            handOffPhase.store(HandOffPhase.deposited.rawValue, ordering: .releasing)
            return
        }
        // `waiting`: the task stored its continuation before its compare-and-swap, which this
        // one's failure read (acquiring).
        let word = parkedContinuation.load(ordering: .relaxed)
        ParkedContinuation.continuation(word, as: Completion.self).resume(returning: result)
    }

    /// The result deposited by a completer, when there is one: the asking thread, after the
    /// turn it ran in place. `nil` while the ask is open (or being deposited on another thread).
    @inlinable
    final func takeDepositedResult() -> Completion? {
        guard handOffPhase.load(ordering: .acquiring) == HandOffPhase.deposited.rawValue else { return nil }
        // Safety: initialised by `completeHandOff` (the `deposited` phase says so), moved out
        // once: only the asking thread takes a deposit.
        return depositRoom.assumingMemoryBound(to: Completion.self).move()
    }

    /// The asking task's side of a hand-off ask that was still open after its turn in place:
    /// waits with `continuation`, unless a completer got there first (then resumes it at once
    /// with the deposited result). Cancellation as in ``install(_:)``.
    @inlinable
    final func waitAfterHandOff(_ continuation: UnsafeContinuation<Completion, Never>) {
        parkedContinuation.store(ParkedContinuation.word(continuation), ordering: .relaxed)
        if handOffPhase.compareExchange(
            expected: HandOffPhase.running.rawValue, desired: HandOffPhase.waiting.rawValue,
            ordering: .acquiringAndReleasing
        ).exchanged {
            installed.store(true, ordering: .sequentiallyConsistent)
            if cancelRequested.load(ordering: .sequentiallyConsistent) { complete(.failure(.cancelled)) }
            return
        }
        // A completer on another thread is depositing: its store is a few instructions away.
        waitForDeposit()
        // Safety: `waitForDeposit` returned, so the phase is `deposited` and the result is in the room;
        // only the asking thread, this one, takes it.
        continuation.resume(returning: takeDepositedResult().unsafelyUnwrapped)
    }

    override func fire() { complete(.failure(.timedOut(after: timeout))) }

    override func fireAtShutdown() { complete(.failure(.recipientStopped)) }

    override func replyDropped() {
        if let reason = UnansweredReplyError.current {
            complete(.failure(AskError.wrapping(reason)))
            return
        }
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
///
/// Every stored field has a layout that does not depend on `Value` or `Message` (the asker's
/// ref is kept as its untyped parts): the generic deinit then looks up no metadata (an
/// `ActorRef<Message>?` field cost ~700 instructions per ask in runtime metadata lookups).
@usableFromInline
final class ActorAskState<Value: Sendable, Message: Sendable>: AskState<Value>, @unchecked Sendable {  // see AskState
    /// The asker's ref, untyped: like any ref, it keeps a self-invalidating asker alive until
    /// the answer is in.
    @exclusivity(unchecked) private var replyTo: UntypedActorRef?
    @exclusivity(unchecked) private var map: (@Sendable (Completion) -> Message)?
    /// The asker's context when the ask was made (a system that propagates contexts): the reply
    /// message carries it, so that the continuation runs in the asker's trace. Boxed, so that
    /// an ask without one stores, moves and destroys a nil class reference: an
    /// `(any Sendable)?` field cost ~170 instructions per ask in the runtime's generic value
    /// witnesses of the optional existential, context or not.
    @exclusivity(unchecked) private var context: CapturedContext?

    @usableFromInline
    init(limit: AskLimit, replyTo: ActorRef<Message>, map: @escaping @Sendable (Completion) -> Message) {
        self.replyTo = replyTo.untyped
        self.map = map
        let system = replyTo.cell.system
        if system.propagatesContext, let captured = system.contextPropagation?.captureContext() {
            context = CapturedContext(captured)
        } else {
            context = nil
        }
        super.init(limit: limit, waiter: .actor)
    }

    override func deliverToActor(_ result: Completion) {
        guard let replyTo, let map else { return }
        self.replyTo = nil
        self.map = nil
        let carried = context
        context = nil
        // Safety: `replyTo` was made from an `ActorRef<Message>` (the initialiser).
        let cell = unsafeDowncast(replyTo.cell, to: MailboxCell<Message>.self)
        if !cell.system.propagatesContext {
            _ = cell.tell(map(result))
        } else {
            _ = cell.send(map(result), carrying: carried?.value)
        }
        withExtendedLifetime(replyTo) {}
    }
}

/// A context captured for a later message (``ActorAskState``'s reply), in a box of its own.
final class CapturedContext: Sendable {
    let value: any Sendable
    init(_ value: any Sendable) { self.value = value }
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
