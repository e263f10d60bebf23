import Troupe

/// One identity's place in a region's directory on this node: the gate senders pass without a
/// lock, the current activation, and (under the region's lock) where its lifecycle stands and
/// what the slow path buffered.
///
/// A slot lives from an identity's first use until its activation stops with nothing buffered;
/// it is then ``EntitySlot/Phase/retired`` and dropped from the directory, and a reference that
/// still holds it goes through the directory to the identity's next slot.
@usableFromInline
final class EntitySlot<Message: Sendable>: KeyedSlot, @unchecked Sendable {  // guarded by the gate or the region's lock
    /// Where the slot's activation stands.
    enum Phase: UInt8 {
        /// No activation; the gate is closed. The next message activates one.
        case vacant
        /// An activation runs and the gate is open.
        case active
        /// The gate is closed; senders still inside are finishing their sends.
        case draining
        /// The activation was asked to stop after its queued messages.
        case stopping
        /// A new activation is receiving what was buffered; the gate is still closed.
        case flushing
        /// Dropped from the directory; senders go to the identity's next slot.
        case retired
    }

    /// A message, or an ask's wait, that arrived while the gate was closed.
    enum Pending {
        case message(Message)
        case waiter(CheckedContinuation<Void, Never>)
    }

    @usableFromInline let gate = EntityGate()

    /// The activation's ref, in memory of its own so that a sender borrows it in place: the
    /// pointer is a `let`, so reading through it copies nothing. Callgrind, the tell row of
    /// `troupe-bench --quick entities`: read from a `var` of the class, a tell took 209
    /// instructions and two retain/release pairs; through this pointer, 180 and one (112 through
    /// the activation's own `ActorRef`). Initialized exactly while ``hasActivation``.
    @usableFromInline let activationStorage = UnsafeMutablePointer<ActorRef<Message>>.allocate(capacity: 1)
    /// Under the region's lock.
    private(set) var hasActivation = false

    var phase = Phase.vacant
    /// The activation has terminated (its stop, its failure, or the system's shutdown).
    var terminated = false
    /// The region asked this activation to passivate (idle, over the limit, or all).
    var passivating = false
    var buffer: [Pending] = []
    /// The gate's completed-send count at the last sweep, and how many sweeps in a row saw it
    /// unchanged with nobody inside.
    var lastCompleted: UInt32 = 0
    var idleSweeps: UInt32 = 0
    /// Which activation of the region this slot's current one is (for least-recently-used order).
    var activationNumber: UInt64 = 0

    deinit {
        assert(phase == .retired || phase == .vacant, "EntitySlot \(key) freed while \(phase)")
        if hasActivation { activationStorage.deinitialize(count: 1) }
        activationStorage.deallocate()
    }

    /// The activation, for the region under its lock.
    var activation: ActorRef<Message>? { hasActivation ? activationStorage.pointee : nil }

    /// Under the region's lock, with the gate closed and claimed.
    func setActivation(_ ref: ActorRef<Message>) {
        precondition(!hasActivation, "EntitySlot \(key): an activation is already set")
        activationStorage.initialize(to: ref)
        hasActivation = true
    }

    /// Under the region's lock, with the gate closed and claimed.
    func clearActivation() {
        precondition(hasActivation, "EntitySlot \(key): no activation to clear")
        activationStorage.deinitialize(count: 1)
        hasActivation = false
    }

    /// Tells the activation. Only between a successful `gate.enter()` and the `leave`.
    @inlinable @inline(__always)
    func tellActivation(_ message: consuming Message) -> TellOutcome {
        // Safety: an open gate means the activation is initialized, and it stays so until this
        // sender leaves (clearing it needs the gate claimed, which needs nobody inside).
        activationStorage.pointee.tell(message)
    }

    /// Asks the activation. Only between a successful `gate.enter()` and the `leave`.
    @inlinable
    nonisolated(nonsending)
        func askActivation<Value: Sendable>(
            timeout: Duration?, _ request: (Reply<Value>) -> Message
        ) async throws(AskError) -> Value
    {
        // Safety: as in tellActivation; the caller stays inside the gate until the answer.
        try await activationStorage.pointee.ask(timeout: timeout, request)
    }
}
