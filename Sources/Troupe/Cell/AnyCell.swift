#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
internal import CTroupe

/// 80 bytes (`CTroupe_mailbox_storage_size`) of word-aligned storage.
typealias MailboxStorage = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

/// The runtime side of an actor: mailbox, lifecycle and identity. The mailbox belongs to the
/// cell, not to the actor instance, so an instance can be replaced (restart) without losing
/// pending messages.
///
/// Thread-safety: the `stopped` bit of `lifecycle` is set only by the thread holding the
/// mailbox's scheduling right and read by senders; the `restartRequested` bit is set by any
/// thread and cleared by the right's holder; the `abandoned` bit is set by a shutdown whose
/// deadline passed and read by the right's holder; the `jobLane` bit is set once, by a job
/// lane's initialiser. `mailboxAddress` is written once, by the initialiser, before the cell is
/// shared; `instanceAddress` by the initialiser and then only by the right's holder. `extras`, `flags` and the subclass's instance are
/// touched only by the right's holder (see ``CellExtras`` for the one exception);
/// `liveIndex` only under the system's `liveActors` lock. The mailbox's
/// scheduling right (CTroupe_mailbox_push / finish_turn) is what hands the cell from one
/// worker to the next with a happens-before edge.
@usableFromInline
class AnyCell: @unchecked Sendable {  // see the thread-safety contract above
    /// The C mailbox, which lives in `mailboxStorage` (set once, by the initialiser; an atomic
    /// so that reading it is a plain load without an exclusivity check, like `flagBits`).
    private let mailboxAddress = Atomic<UInt>(0)
    /// Room for the mailbox (`CTroupe_mailbox_storage_size` bytes), so that a spawn allocates
    /// one object less. Touched only through the pointer `CTroupe_mailbox_init` returns.
    /// (Words, not SIMD vectors: a field aligned beyond 16 bytes makes Swift allocate the
    /// whole object with `memalign`.)
    @exclusivity(unchecked) private var mailboxStorage: MailboxStorage = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    final var mailbox: OpaquePointer {
        // Safety: `init` stores the mailbox's (non-null) address before the cell is shared; never changed.
        OpaquePointer(bitPattern: mailboxAddress.load(ordering: .relaxed)).unsafelyUnwrapped
    }
    @usableFromInline let system: ActorSystem
    let id: UInt64
    /// The id of the actor whose context spawned this one (``ActorContext/spawn(_:options:)``);
    /// 0 for one the system spawned (ids start at 1). Immutable, so snapshots read it from any
    /// thread (the `parent` link in ``CellExtras`` belongs to the scheduling right's holder).
    let parentID: UInt64
    let config: CellConfig?
    /// ``Lifecycle`` bits, shared with other threads. Any bit set sends senders, and the turn,
    /// down the slow path.
    @usableFromInline let lifecycle = Atomic<UInt8>(0)
    /// ``CellFlags``, protected by the scheduling right: only its holder reads or writes them.
    /// Kept in an atomic only so that no access is checked for exclusivity: the turn touches
    /// them from inlinable code compiled in the user's module, where `@exclusivity(unchecked)`
    /// does not reach, and a dynamic check costs about 70 instructions. Relaxed loads and
    /// stores are plain moves.
    @usableFromInline let flagBits = Atomic<UInt8>(0)
    @inlinable final var flags: CellFlags {
        get { CellFlags(rawValue: flagBits.load(ordering: .relaxed)) }
        set { flagBits.store(newValue.rawValue, ordering: .relaxed) }
    }
    #if DEBUG
        /// Debug builds: the thread running this cell's turn (0 between turns), for ``assertInTurn(_:)``.
        let turnThread = Atomic<UInt>(0)
    #endif
    /// Copied from `config` so the per-message paths need not touch it.
    let mailboxMode: MailboxMode
    // The one-byte and four-byte fields stay together, after `lifecycle` and `flagBits`, so that
    // no padding is left: a cell of an instance that fits inline is 232 bytes, a 240-byte malloc
    // chunk (`MemoryPerIdleActor`); 8 more would take 256.
    /// Whether the cell's current run-queue or next-slot entry carries a retain. Written by
    /// the holder of the scheduling right just before it places the cell (``makeEntry()``,
    /// `Worker.runCell`'s requeue), read by whoever takes the entry, and with it the right
    /// (the queue's push and pop, or the slot's exchanges, order the two).
    ///
    /// Entries of a running actor carry no retain: a cell without the `stopped` bit is on the
    /// system's live-actor list, which holds it, and only its own turn takes it off (`stopNow`,
    /// which then retains it for the rest of the turn: `Worker.retainIfRunningUnretained`), so
    /// the cell outlives every entry placed before that turn. A stopped cell, scheduled to
    /// dead-letter late messages, has no such holder: its entries carry a retain. Neither has a
    /// cell that was never on the list (the `jobLane` bit: a Swift executor's job lane, held
    /// by its executor): its entries always carry one.
    @exclusivity(unchecked) final var entryRetained = false
    /// Failures and restarts so far: written by the holder of the scheduling right, read by
    /// snapshots.
    let failureTotal = Atomic<UInt32>(0)
    let restartTotal = Atomic<UInt32>(0)
    /// Where the cell sits in the system's ``LiveActors`` (-1: not a member); protected by the
    /// system's `liveActors` lock. Four bytes, beside the counters above, so that it takes
    /// what was padding: the cell stays in its malloc size class.
    @exclusivity(unchecked) var liveIndex: Int32 = -1
    /// Where `ActorCell`'s instance lives (inside the cell or in its box; 0 once released). Written by the
    /// initialiser and by the holder of the scheduling right; an atomic for the same reason as
    /// `flagBits`.
    @usableFromInline let instanceAddress = Atomic<UInt>(0)
    var extras: CellExtras?
    /// The address of the cell's retained ``CellHistograms`` (0: none yet); see
    /// `AnyCell+Introspection.swift`.
    let histogramsAddress = Atomic<UInt>(0)

    init(system: borrowing ActorSystem, config: borrowing CellConfig?, parentID: UInt64) {
        self.system = copy system
        self.id = system.nextActorID()
        self.parentID = parentID
        let stored = copy config
        self.config = stored
        if let stored, stored.capacity > 0 {
            mailboxMode = stored.overflow == .dropOldest ? .boundedDroppingOldest : .bounded
        } else {
            mailboxMode = .unbounded
        }
        precondition(MemoryLayout.size(ofValue: mailboxStorage) >= Int(CTroupe_mailbox_storage_size))
        // An object never moves, so the storage's address stays valid for the cell's life.
        // Safety: `mailboxStorage` is a private stored property accessed directly, so this is its address
        // inside the object (not a temporary copy), valid for the cell's life; only the mailbox uses it.
        let storage = withUnsafeMutablePointer(to: &mailboxStorage) { UnsafeMutableRawPointer($0) }
        // Safety: the owner pointer is unretained: the mailbox lives inside this cell, so the cell outlives
        // every use of it (a queued mailbox's cell is held by its entry's retain or the live-actor list).
        let mailbox = CTroupe_mailbox_init(
            storage, Unmanaged.passUnretained(self).toOpaque(),
            stored?.tracksDepth ?? false || system.introspector.tracksMailboxDepths,
            mailboxMode == .boundedDroppingOldest)!
        mailboxAddress.store(UInt(bitPattern: mailbox), ordering: .relaxed)
    }

    // The mailbox goes with the cell. Non-empty mailboxes are always scheduled, and a
    // scheduled cell is held (by its entry's retain or by the live-actor list, see
    // `entryRetained`), so a released cell's mailbox is empty, and nobody holds its scheduling
    // right (checked in debug builds: an envelope left here would be a message lost).
    deinit {
        assert(CTroupe_mailbox_is_empty(mailbox), "actor #\(id) released with messages in its mailbox")
        assert(!CTroupe_mailbox_is_scheduled(mailbox), "actor #\(id) released while scheduled or running")
        releaseOwnHistograms()
    }

    /// Whether the definition is an ``InspectableActor``, for introspection.
    var isInspectable: Bool { false }
    /// Tells the actor the test message its definition makes of `text` (see
    /// ``InspectableActor/testMessage(from:)``): `.notInspectable` when the definition is not
    /// inspectable, `.refused` when it makes none of the text. Any thread.
    func tellTestMessage(_ text: String) -> TestMessageOutcome { .notInspectable }

    /// The type that defines the actor, for introspection.
    var definitionTypeName: String { "job lane" }
    /// The type of the actor's messages, for introspection.
    var messageTypeName: String { "Swift job" }

    var address: ActorAddress { ActorAddress(id: id, name: config?.name) }

    // MARK: The inlinable send path's entry points (non-generic, so callers specialise the rest)

    /// Whether a user message can take the fast path: the actor runs, the system accepts and
    /// propagates no context, the mailbox is unbounded. Any thread.
    @inline(__always)
    final var acceptsFastSend: Bool {
        lifecycle.load(ordering: .relaxed) == 0 && system.fastSendOpen.load(ordering: .relaxed)
            && mailboxMode == .unbounded
    }

    /// When a user message can take the fast path (``acceptsFastSend``), allocates its
    /// envelope (a user envelope without ask token) and returns where its payload goes; `nil`
    /// otherwise (the caller takes the slow path). Any thread.
    @usableFromInline
    final func allocateForFastSend(payloadSize: Int) -> UnsafeMutableRawPointer? {
        guard _fastPath(acceptsFastSend) else { return nil }
        return Envelope.allocate(payloadSize: payloadSize, kind: UInt32(CTroupe_envelope_kind_user), askToken: nil)
            .payload
    }

    /// Pushes the user envelope whose payload (initialised) is at `payload` (from
    /// ``allocateForFastSend(payloadSize:)``), and schedules the actor when the push found its
    /// mailbox empty. Any thread; takes ownership of the envelope.
    @usableFromInline
    final func pushUserEnvelope(payload: UnsafeMutableRawPointer) {
        push(Envelope(payload: payload), reserved: false)
    }

    /// Makes the run-queue or next-slot entry of a cell whose scheduling right the caller just
    /// won: retained only when the actor has stopped or the cell is not on the live-actor list
    /// (see ``entryRetained``).
    @inline(__always)
    final func makeEntry() -> Unmanaged<AnyCell> {
        let bits = Lifecycle(rawValue: lifecycle.load(ordering: .acquiring))
        // Safety: a stopped cell or a job lane has no other holder, so its entry carries a retain, given
        // back by whoever takes the entry with the right; a running cell's entry needs none: the
        // live-actor list holds it until its own turn takes it off (see `entryRetained`).
        if _slowPath(!bits.isDisjoint(with: [.stopped, .jobLane])) {
            entryRetained = true
            return Unmanaged.passRetained(self)
        }
        entryRetained = false
        return Unmanaged.passUnretained(self)
    }

    /// Pushes `envelope` and schedules the actor when the push found its mailbox empty (the
    /// push that wins the scheduling right schedules, exactly once). `reserved`: the envelope's
    /// place was reserved (bounded mailboxes) or it is uncounted (system envelopes); see
    /// `CTroupe_mailbox_push`. Any thread; takes ownership of the envelope.
    @inline(__always)
    final func push(_ envelope: Envelope, reserved: Bool) {
        if CTroupe_mailbox_push(mailbox, envelope.raw, reserved) {
            system.schedule(self)
        }
    }
    var isStopped: Bool { Lifecycle(rawValue: lifecycle.load(ordering: .acquiring)).contains(.stopped) }
    /// Whether this cell is a Swift executor's job lane (the `jobLane` bit).
    var isJobLane: Bool { Lifecycle(rawValue: lifecycle.load(ordering: .acquiring)).contains(.jobLane) }
    var isStoppedOrAbandoned: Bool {
        !Lifecycle(rawValue: lifecycle.load(ordering: .acquiring)).isDisjoint(with: [.stopped, .abandoned])
    }

    /// Why the actor stopped; `nil` while it runs. Reliable on the actor itself, and on other
    /// threads once the cell has left the live-actor list (see ``CellExtras``).
    var terminationReason: TerminationReason? {
        isStopped ? (extras?.stopReason ?? .stopped) : nil
    }

    /// Runs one turn: at most `limit` envelopes. Returns whether the caller keeps the
    /// scheduling right (more is pending) and must run or queue the cell again. Returning
    /// false while suspended also keeps the right: the restart timer reschedules the cell.
    /// Called only by the holder of the scheduling right, with its thread's handler counter
    /// (``UnsafeTurnProgress``).
    func runTurn(buffer: UnsafeEnvelopeBuffer, limit: Int, progress: UnsafeTurnProgress) -> Bool {
        fatalError("subclass")
    }

    // MARK: The inlinable turn's entry points (non-generic; the holder of the scheduling right)

    /// Pops up to `capacity` envelopes into `buffer` (one at a time from a bounded mailbox, so
    /// that none wait in a popped batch beyond its capacity); see `CTroupe_mailbox_pop_batch`.
    @usableFromInline
    final func popEnvelopes(into buffer: UnsafeEnvelopeBuffer, capacity: Int) -> Int {
        // Safety: both element types are one optional pointer (same size and stride), rebound only for
        // the C call; every turn passes a limit no larger than its buffer, so `capacity` slots exist.
        buffer.withMemoryRebound(to: UnsafeMutablePointer<CTroupe_envelope>?.self, capacity: capacity) {
            CTroupe_mailbox_pop_batch(mailbox, $0, mailboxMode == .unbounded ? capacity : 1)
        }
    }

    /// The batch loop of a turn, shared by actors and job lanes: pops batches into `buffer`
    /// until `limit` envelopes were handed to `handle` or the mailbox is empty, counting each
    /// handler in `progress`. `handle` gets the buffer, the envelope's index and the batch's
    /// count, and returns false to end the turn at once (the envelopes after `index` are then
    /// the caller's: a suspended actor keeps them). Returns false when `handle` did.
    ///
    /// A batch smaller than asked for means the queue was empty a moment ago (or the mailbox is
    /// bounded and gives one at a time): popping again would almost always find nothing, and
    /// `finishTurn` looks again anyway, keeping the right if a message came meanwhile.
    @inlinable @inline(__always)
    final func forEachPoppedEnvelope(
        buffer: UnsafeEnvelopeBuffer, limit: Int, progress: UnsafeTurnProgress,
        _ handle: (UnsafeEnvelopeBuffer, _ index: Int, _ count: Int) -> Bool
    ) -> Bool {
        var handled = 0
        while handled < limit {
            let requested = limit - handled
            let count = popEnvelopes(into: buffer, capacity: requested)
            if count == 0 { break }
            for index in 0..<count {
                progress.advance()
                if _slowPath(!handle(buffer, index, count)) { return false }
            }
            handled += count
            if count < requested { break }
        }
        return true
    }

    /// Ends the turn: whether the caller keeps the scheduling right; see
    /// `CTroupe_mailbox_finish_turn`.
    @usableFromInline
    final func finishTurn() -> Bool { CTroupe_mailbox_finish_turn(mailbox) }

    /// Debug builds: records (or clears) the calling thread as the one running this cell's
    /// turn, for ``assertInTurn(_:file:line:)``. The inlinable turn calls it inside `assert`,
    /// so only in debug builds; returns true.
    @usableFromInline
    final func markTurnThread(entering: Bool) -> Bool {
        #if DEBUG
            turnThread.store(entering ? UInt(pthread_self()) : 0, ordering: .relaxed)
        #endif
        return true
    }

    /// Spawned during shutdown; see `ActorCell`.
    func stopBeforeStarting() { fatalError("subclass") }

    /// Enqueues a system message; never dropped. Any thread.
    final func sendSystem(_ message: SystemMessage) {
        push(Envelope.make(message, kind: UInt32(CTroupe_envelope_kind_system), askToken: nil), reserved: true)
    }

    /// Asks the actor to stop after the messages already in its mailbox.
    final func requestStop(_ reason: TerminationReason = .stopped) { sendSystem(.stop(reason)) }

    /// Asks the actor to restart before its next message (after a pause of `delay`), keeping
    /// its mailbox. Any thread. False when it cannot: stopped, or spawned without a factory.
    final func requestRestart(reason: any Error, after delay: Duration) -> Bool {
        guard let config, config.factory != nil, !isStopped else { return false }
        config.requestRestart(RestartRequest(reason: reason, delay: delay))
        lifecycle.bitwiseOr(Lifecycle.restartRequested.rawValue, ordering: .releasing)
        sendSystem(.wake)
        return true
    }

    /// Debug builds: traps unless the calling thread runs this cell's turn, that is, holds its
    /// mailbox's scheduling right. Checks the contracts that say "only the holder of the
    /// scheduling right" (handlers, hooks, the context), as an event loop checks that it is
    /// on its own thread. Free in release builds.
    @inline(__always)
    final func assertInTurn(_ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
            let owner = turnThread.load(ordering: .relaxed)
            if owner != UInt(pthread_self()) {
                fatalError(
                    "\(what()) used outside \(address)'s turn: an ActorContext (and the cell state behind it) belongs to the handler it was given to; capture context.ref to reach the actor from elsewhere",
                    file: file, line: line)
            }
        #endif
    }

    final var extrasCreatingIfNeeded: CellExtras {
        if let extras { return extras }
        let created = CellExtras()
        extras = created
        return created
    }
}
