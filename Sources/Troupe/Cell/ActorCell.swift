import Logging
import Synchronization
internal import CTroupe

/// Room for an actor's instance inside its cell: 48 bytes, word-aligned (see `instanceRoom`).
@usableFromInline typealias InstanceRoom = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

/// The cell of one actor definition: owns the instance and runs its turns.
@usableFromInline
final class ActorCell<Definition: ActorDefinition>: MailboxCell<Definition.Message>,
    @unchecked Sendable  // AnyCell's contract
{
    @usableFromInline typealias Message = Definition.Message

    /// Where the instance lives: inside the cell, in `instanceRoom`, when it fits (at most
    /// 48 bytes, aligned to at most 8: the spawn is then one allocation), otherwise as the
    /// header of a box of its own (`instanceBox`). Either way ``AnyCell/instanceAddress`` is
    /// its address, and it is released on the actor's own thread right after `stopped` runs
    /// (``releaseInstance()``), so that whatever it held (a pending ``Reply``, a connection)
    /// goes at once, not when the last ``ActorRef`` does.
    ///
    /// Why not a `Definition?` stored property: the generic code that initialises, clears and
    /// destroys one looks up the metadata of `Optional<Definition>` each time (three hash-table
    /// searches in the runtime, about 1,000 instructions per actor). The room is plain words,
    /// and the instance in it is moved in and destroyed through `Definition`'s own value
    /// witnesses, whose metadata the cell's class metadata holds. Both are touched only by the
    /// holder of the scheduling right (and by `deinit`, for an actor that never stopped).
    @exclusivity(unchecked) private var instanceRoom: InstanceRoom = (0, 0, 0, 0, 0, 0)
    /// The box of an instance too large (or too aligned) for `instanceRoom`; `nil` for one
    /// that fits and once the instance is released. The box is made by code specialised for
    /// `Definition` (``makeBox(_:)``, from the inlinable `spawn`), where its metadata is cached.
    @exclusivity(unchecked) var instanceBox: ManagedBuffer<Definition, Void>?

    /// Whether `Definition` is stored inside the cell (compile-time constant where specialised).
    @inlinable static var storesInstanceInline: Bool {
        MemoryLayout<Definition>.size <= MemoryLayout<InstanceRoom>.size
            && MemoryLayout<Definition>.alignment <= MemoryLayout<InstanceRoom>.alignment
    }

    /// An instance that fits in the cell (``storesInstanceInline``): the spawn's only allocation.
    @usableFromInline
    init(
        system: borrowing ActorSystem, inlineInstance instance: consuming Definition, config: borrowing CellConfig?,
        parentID: UInt64
    ) {
        assert(Self.storesInstanceInline, "\(Definition.self) does not fit in a cell")
        instanceBox = nil
        super.init(system: system, config: config, parentID: parentID)
        // Safety: `instanceRoom` is a private stored property of this final class accessed directly, so
        // this is its address inside the object, which never moves; the room is word-aligned and at
        // least as large as `Definition` (checked above), and holds nothing else.
        let room = withUnsafeMutablePointer(to: &instanceRoom) { UnsafeMutableRawPointer($0) }
        assert(Int(bitPattern: room) % MemoryLayout<Definition>.alignment == 0)
        room.initializeMemory(as: Definition.self, to: instance)
        instanceAddress.store(UInt(bitPattern: room), ordering: .relaxed)
    }

    /// An instance in a box of its own (one that does not fit in the cell).
    @usableFromInline
    init(
        system: borrowing ActorSystem, box: consuming ManagedBuffer<Definition, Void>, config: borrowing CellConfig?,
        parentID: UInt64
    ) {
        // Borrowed where they are only copied into stored properties: with the default (owned)
        // conventions each spawn paid three more retain/release pairs, measured.
        // Safety: the box is a heap object that never moves, and `instanceBox` holds it until
        // `releaseInstance`, which clears this address first.
        let address = UInt(bitPattern: box.withUnsafeMutablePointerToHeader { $0 })
        instanceBox = box
        super.init(system: system, config: config, parentID: parentID)
        instanceAddress.store(address, ordering: .relaxed)
    }

    /// A cell for `instance`, inside it when it fits, else boxed (compiled for `Definition`
    /// where it is inlined, so the choice is made at compile time).
    @inlinable
    convenience init(system: ActorSystem, instance: consuming Definition, config: CellConfig?, parentID: UInt64 = 0) {
        if Self.storesInstanceInline {
            self.init(system: system, inlineInstance: instance, config: config, parentID: parentID)
        } else {
            self.init(system: system, box: Self.makeBox(instance), config: config, parentID: parentID)
        }
    }

    /// The box for a new actor's instance that does not fit in the cell (see `instanceBox`).
    @inlinable
    static func makeBox(_ instance: consuming Definition) -> ManagedBuffer<Definition, Void> {
        let instance = instance
        return ManagedBuffer<Definition, Void>.create(minimumCapacity: 0) { _ in instance }
    }

    /// A safety net: every path that ends an actor releases its instance first (`stopNow`,
    /// `stopBeforeStarting`), and a live cell is held by its system's live-actor list, so no
    /// path is known to free a cell whose instance is still in the room; if one does, the
    /// instance is destroyed here rather than leaked. A boxed one goes with `instanceBox`.
    deinit {
        if instanceBox == nil,
            let instance = UnsafeMutablePointer<Definition>(bitPattern: instanceAddress.load(ordering: .relaxed))
        {
            // Safety: a non-zero address with no box is `instanceRoom`, initialised and not yet released.
            instance.deinitialize(count: 1)
        }
    }

    /// The spawn factory, cast back to its type: only when restarting (a dynamic cast).
    var factory: (@Sendable () -> Definition)? { config?.factory as? @Sendable () -> Definition }
    var isRestartable: Bool { config?.factory != nil }

    /// Runs `body` on the instance. A stateless (zero-sized) definition is used through a
    /// local copy instead: ThreadSanitizer reports accesses to a zero-sized stored property at
    /// the object's base address, which other threads legitimately touch (false races), and a
    /// value without state has nothing to write back.
    ///
    /// The instance is reached through its address (``AnyCell/instanceAddress``; neither the
    /// cell nor a box ever moves), so that the turn, compiled in the user's module, reads no class property
    /// that would be checked for exclusivity. Only called while the instance exists (before
    /// the actor stops).
    @inlinable @inline(__always)
    func withInstance<Result>(_ body: (inout Definition) throws -> Result) rethrows -> Result {
        assert(!flags.contains(.instanceReleased), "the instance of a stopped actor was used")
        // Safety: the address is `instanceRoom`'s or `instanceBox`'s header, an initialised `Definition` held until
        // `releaseInstance` zeroes it (asserted above); only the holder of the scheduling right gets here.
        let typed = UnsafeMutablePointer<Definition>(bitPattern: instanceAddress.load(ordering: .relaxed))
            .unsafelyUnwrapped
        if MemoryLayout<Definition>.size == 0 {
            var stateless = typed.pointee
            return try body(&stateless)
        }
        return try body(&typed.pointee)
    }

    /// Drops the instance of a stopped actor. A ``Reply`` it held fails its ask now, with
    /// ``AskError/recipientStopped``. Called by the holder of the scheduling right, after
    /// `stopped` (or for an actor that never started).
    func releaseInstance() {
        flags.insert(.instanceReleased)
        let address = instanceAddress.load(ordering: .relaxed)
        guard address != 0 else { return }
        CTroupe_set_releasing_stopped_actor(true)
        instanceAddress.store(0, ordering: .relaxed)
        if instanceBox != nil {
            instanceBox = nil
        } else {
            // Safety: with no box, the address is `instanceRoom`'s, which holds an initialised instance
            // until here (the address is zeroed first, so nothing reaches it again).
            UnsafeMutablePointer<Definition>(bitPattern: address).unsafelyUnwrapped.deinitialize(count: 1)
        }
        CTroupe_set_releasing_stopped_actor(false)
    }

    var context: ActorContext<Message> { ActorContext(cell: self) }

    override var definitionTypeName: String {
        if let hosted = Definition.self as? any HostsDefinition.Type { return hosted.hostedTypeName }
        return String(reflecting: Definition.self)
    }

    override var messageTypeName: String { String(reflecting: Message.self) }

    override var isInspectable: Bool { Definition.self is any InspectableActor.Type }

    override func tellTestMessage(_ text: String) -> TestMessageOutcome {
        guard let inspectable = Definition.self as? any InspectableActor.Type else { return .notInspectable }
        guard let message = Self.testMessage(of: inspectable, from: text) as? Message else { return .refused }
        return .told(tell(message))
    }

    /// `Definition`'s test message for `text`, through its (opened) conformance.
    private static func testMessage<Inspectable: InspectableActor>(
        of type: Inspectable.Type, from text: String
    ) -> Any? {
        Inspectable.testMessage(from: text)
    }

    /// The instance's own description (on the actor: the holder of the scheduling right).
    private func describeInstance<Inspectable: InspectableActor>(as type: Inspectable.Type) -> String {
        withInstance { instance in
            // Safety: `Inspectable` is `Definition` itself (the caller's cast of `Definition.self`
            // succeeded), so the instance's memory holds an `Inspectable`; it is only read here.
            withUnsafePointer(to: &instance) {
                UnsafeRawPointer($0).assumingMemoryBound(to: Inspectable.self).pointee.inspectionDescription()
            }
        }
    }

    /// Spawned during shutdown: the actor never runs; everything sent to it is dead-lettered.
    /// Before the cell is shared.
    override func stopBeforeStarting() {
        extrasCreatingIfNeeded.stopReason = .systemShutdown
        lifecycle.store(Lifecycle.stopped.rawValue, ordering: .releasing)
        flags.insert(.started)
        releaseInstance()
    }

    /// Runs the turn compiled for `Definition` (``ActorDefinition/_turn(_:)``, specialised in the
    /// module that declares the definition; generic for the runtime's own definitions).
    override func runTurn(buffer: UnsafeEnvelopeBuffer, limit: Int, progress: UnsafeTurnProgress) -> Bool {
        Definition._turn(_ActorTurn(cell: self, buffer: buffer, limit: limit, progress: progress))
    }

    /// First turn (runs `started`) or the turn that ends a suspension. Returns false when the
    /// actor is (again) suspended.
    @usableFromInline
    func beginTurnSlowly() -> Bool {
        if !flags.contains(.started) {
            flags.insert(.started)
            withInstance { $0.started(context: context) }
            system.hooks.actorStarted(address)
            if flags.contains(.stopRequested) { stopNow(.stopped) }
            return true
        }
        // Resuming after a delayed restart's pause.
        flags.remove(.suspended)
        let extras = extras!
        guard let suspension = extras.suspension else { return true }
        extras.suspension = nil
        // A restart requested meanwhile is covered by this one.
        if Lifecycle(
            rawValue: lifecycle.bitwiseAnd(~Lifecycle.restartRequested.rawValue, ordering: .acquiringAndReleasing)
                .oldValue
        ).contains(.restartRequested) {
            _ = config?.takeRestartRequest()
        }
        if !Lifecycle(rawValue: lifecycle.load(ordering: .relaxed)).contains(.stopped) {
            replaceInstance(reason: suspension.reason)
            retryFailingMessage()
        }
        while !extras.held.isEmpty && !flags.contains(.suspended) {
            handleSlowly(UnsafeMutableRawPointer(extras.held.removeFirst()))
        }
        return !flags.contains(.suspended)
    }

    /// The turn of a suspended actor ends; see ``ResumeEntry``.
    @usableFromInline
    func suspensionTurnEnded() -> Bool {
        extras!.suspension!.resume.turnEnded()
    }

    /// Handles an envelope the turn's fast check let through: a system message, or a user
    /// message while a lifecycle bit is set (stopped, abandoned, restart requested). Also the
    /// path of envelopes held across a suspension.
    @usableFromInline
    func handleSlowly(_ raw: UnsafeMutableRawPointer) {
        // Safety: `raw` is a popped envelope of this mailbox (or one held over a suspension), which the
        // C allocator made as a `CTroupe_envelope`.
        let envelope = Envelope(raw: raw.assumingMemoryBound(to: CTroupe_envelope.self))
        if _slowPath(envelope.isSystem) {
            handleSystem(envelope.take(as: SystemMessage.self))
            return
        }
        if lifecycle.load(ordering: .relaxed) != 0 {
            let bits = Lifecycle(rawValue: lifecycle.load(ordering: .acquiring))
            if bits.contains(.stopped) {
                deadLetter(envelope, .recipientStopped)
                return
            }
            if bits.contains(.abandoned) {
                deadLetter(envelope, .systemShutdown)
                return
            }
            if restartAsRequested() {
                // A delayed restart began: this envelope goes first when the actor resumes.
                extras!.held.insert(envelope.raw, at: 0)
                return
            }
        }
        if _slowPath(EnvelopeLayout.sideWord(raw) != 0) {
            handleAnnotated(raw)
            return
        }
        let token = envelope.askToken
        deliver(envelope.take(as: Message.self), token: token)
    }

    func handleSystem(_ message: SystemMessage) {
        switch message {
        case .stop(let reason):
            if !isStopped { stopNow(reason) }
        case .childStopped(let child):
            extras?.children[ObjectIdentifier(child)] = nil
        case .wake:
            if Lifecycle(rawValue: lifecycle.load(ordering: .relaxed)) == .restartRequested { _ = restartAsRequested() }
        case .watchedTerminated(let notice, let targetID):
            guard !isStoppedOrAbandoned, let watch = extras?.watching.removeValue(forKey: targetID) else { return }
            // Safety: `watch(_:mapping:)` of this cell, the only writer of `watching`, stores a
            // `NoticeMapping<Message>`.
            deliver(unsafeDowncast(watch.mapping, to: NoticeMapping<Message>.self).map(notice), token: nil)
        case .timerFired(let entry):
            // Safety: only this cell's own timers send it `.timerFired`, and `startTimer` makes them as
            // `ActorTimer<Message>`.
            let timer = unsafeDowncast(entry, to: ActorTimer<Message>.self)
            timer.inFlight.store(false, ordering: .releasing)
            guard !isStoppedOrAbandoned, let extras, extras.timers[timer.key] === timer else { return }
            if timer.interval == 0 { extras.timers[timer.key] = nil }
            deliver(timer.message, token: nil)
        case .referencesReleased:
            flags.insert(.invalidationCheck)
        case .describe(let reply):
            // Dropped unanswered (the asker sees the actor stopped) once the instance is gone.
            guard !isStoppedOrAbandoned, !flags.contains(.instanceReleased),
                let inspectable = Definition.self as? any InspectableActor.Type
            else { return }
            reply.succeed(describeInstance(as: inspectable))
        }
    }

    // MARK: Timers, watches, self-invalidation (called from ActorContext, on the actor)

    override func startTimer(key: TimerKey, message: Message, delay: Duration, interval: Duration?) {
        cancelTimer(key: key)
        // An interval of zero or less ends the timer after its next tick: it is a single
        // timer. Positive intervals are at least 1 µs.
        let intervalNanoseconds = interval.map { $0 > .zero ? max(1_000, $0.nanoseconds) : 0 } ?? 0
        let timer = ActorTimer(key: key, message: message, interval: intervalNanoseconds, cell: self)
        extrasCreatingIfNeeded.timers[key] = timer
        system.timer.schedule(timer, after: delay)
    }

    override func cancelTimer(key: TimerKey) {
        guard let entry = extras?.timers.removeValue(forKey: key) else { return }
        // Safety: `timers` holds only what `startTimer` of this cell stored: `ActorTimer<Message>`s.
        let timer = unsafeDowncast(entry, to: ActorTimer<Message>.self)
        timer.cancelled.store(true, ordering: .releasing)
        system.timer.cancel(timer)
    }

    override func watch(_ target: AnyCell, mapping: NoticeMapping<Message>) {
        guard target !== self else { return }
        let extras = extrasCreatingIfNeeded
        let known = extras.watching[target.id] != nil
        extras.watching[target.id] = (target, mapping)
        if !known { system.addWatcher(.actor(self), to: target) }
    }

    override func unwatch(_ target: AnyCell) {
        guard extras?.watching.removeValue(forKey: target.id) != nil else { return }
        system.removeWatcher(self, from: target)
    }

}
