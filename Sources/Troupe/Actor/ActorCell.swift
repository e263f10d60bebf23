internal import TroupeLocks
import Logging
import Synchronization
internal import CTroupe

/// System messages: they travel through the same mailbox as user messages (so they keep
/// their order relative to them) but bypass bounded-mailbox accounting and are never dropped.
enum SystemMessage {
    /// Stop after the messages enqueued before this one.
    case stop(TerminationReason)
    /// A child stopped; forget it.
    case childStopped(AnyCell)
    /// Makes an idle actor take a turn, so that a restart request (a lifecycle bit) is acted on.
    case wake
    /// An actor this one watches has terminated (the target's id).
    case watchedTerminated(Terminated, UInt64)
    /// One of this actor's timers is due.
    case timerFired(TimerEntry)
    /// A self-invalidating actor's last reference was dropped (maybe: refs can be re-created).
    case referencesReleased
}

/// Rarely used, immutable cell settings; `nil` for an actor spawned with default options, so
/// that the common cell stays small.
final class CellConfig: Sendable {
    let name: String?
    let capacity: Int                  // 0: unbounded
    let overflow: MailboxOverflowPolicy
    let dedicated: Worker?
    let failureDecider: FailureDecider?
    let tracksDepth: Bool
    /// The spawn factory (`@Sendable () -> Definition`), type-erased so the config stays
    /// non-generic; only read on restart.
    let factory: (any Sendable)?
    /// Set for ``SpawnOptions/selfInvalidating`` actors.
    let selfInvalidation: SelfInvalidation?
    /// A restart requested from another thread and not yet acted on: the address of a
    /// retained `RestartRequest` (0: none), exchanged in by requesters (the last one wins) and
    /// out by the actor.
    private let pendingRestart = Atomic<UInt>(0)

    init(options: SpawnOptions, dedicated: Worker?, factory: (any Sendable)?) {
        name = options.name
        switch options.mailbox {
        case .unbounded:
            capacity = 0
            overflow = .fail
        case .bounded(let bound, let policy):
            if bound < 1 {
                fatalError("SpawnOptions.mailbox: .bounded(capacity: \(bound), …) needs a capacity of at least 1; use .unbounded for no limit")
            }
            capacity = bound
            overflow = policy
        }
        self.dedicated = dedicated
        failureDecider = options.failureDecider
        tracksDepth = options.tracksMailboxDepth || capacity > 0
        self.factory = factory
        selfInvalidation = options.selfInvalidating ? SelfInvalidation() : nil
    }

    deinit { _ = takeRestartRequest() }

    /// Any thread.
    func requestRestart(_ request: RestartRequest) {
        let address = UInt(bitPattern: Unmanaged.passRetained(request).toOpaque())
        let replaced = pendingRestart.exchange(address, ordering: .acquiringAndReleasing)
        if let raw = UnsafeMutableRawPointer(bitPattern: replaced) {
            Unmanaged<RestartRequest>.fromOpaque(raw).release()
        }
    }

    /// The actor, acting on a request (or the config going away).
    func takeRestartRequest() -> RestartRequest? {
        let address = pendingRestart.exchange(0, ordering: .acquiringAndReleasing)
        guard let raw = UnsafeMutableRawPointer(bitPattern: address) else { return nil }
        return Unmanaged<RestartRequest>.fromOpaque(raw).takeRetainedValue()
    }

    static func needed(for options: SpawnOptions, hasFactory: Bool) -> Bool {
        hasFactory || options.name != nil || options.mailbox != .unbounded || options.executor != .shared
            || options.failureDecider != nil || options.tracksMailboxDepth || options.selfInvalidating
    }
}

/// A restart asked for with ``ActorRef/requestRestart(reason:after:)``.
final class RestartRequest: @unchecked Sendable {  // immutable; the error is only read by the actor that takes the request
    let reason: any Error
    let delay: Duration
    init(reason: any Error, delay: Duration) {
        self.reason = reason
        self.delay = delay
    }
}

/// Rare per-actor state, allocated on first use: family links, failures, watches, timers,
/// a pending delayed restart. Touched only by the holder of the mailbox's scheduling right,
/// except `stopReason`, which is written before the cell leaves the registry and read by
/// watchers only after that (under the registry lock).
final class CellExtras {
    weak var parent: AnyCell?
    var children: [ObjectIdentifier: AnyCell] = [:]
    var failureCount = 0
    /// Why the actor stopped, when it was not a plain stop.
    var stopReason: TerminationReason?
    /// Set by ``ActorContext/crash(_:)``; acted on when the handler returns.
    var pendingCrash: (any Error)?
    /// Actors this one watches, by id: the target and its notice mapping (a `NoticeMapping<Message>`).
    var watching: [UInt64: (target: AnyCell, mapping: AnyObject)] = [:]
    /// Active timers by key (`ActorTimer<Message>`).
    var timers: [TimerKey: TimerEntry] = [:]
    /// A delayed restart in progress: the reason and the timer entry that resumes the actor.
    var suspension: (reason: any Error, resume: ResumeEntry)?
    /// Envelopes popped in the turn that suspended the actor and not handled yet; handled
    /// first when it resumes.
    var held: [UnsafeMutablePointer<CTroupe_envelope>] = []
    /// The failing message (a `Message`) and its ask token, kept for one retry after a restart.
    var retry: (message: Any, token: UnsafeMutableRawPointer?)?
}

/// The runtime side of an actor: mailbox, lifecycle and identity. The mailbox belongs to the
/// cell, not to the actor instance, so an instance can be replaced (restart) without losing
/// pending messages.
///
/// Thread-safety: the `stopped` bit of `lifecycle` is set only by the thread holding the
/// mailbox's scheduling right and read by senders; the `restartRequested` bit is set by any
/// thread and cleared by the right's holder. `extras`, `flags` and the subclass's instance are
/// touched only by the right's holder (see ``CellExtras`` for the one exception);
/// `registryNext`/`registryPrevious` only under the system's registry lock. The mailbox's
/// scheduling right (CTroupe_mailbox_push / finish_turn) is what hands the cell from one
/// worker to the next with a happens-before edge.
class AnyCell: @unchecked Sendable {  // see the thread-safety contract above
    let mailbox: OpaquePointer
    let system: ActorSystem
    let id: UInt64
    let config: CellConfig?
    /// Bit 0: stopped. Bit 1: restart requested. Bit 2: abandoned by a shutdown whose deadline
    /// passed. Any bit set sends senders, and the turn, down the slow path.
    let lifecycle = Atomic<UInt8>(0)
    var flags: UInt8 = 0
    /// Copied from `config` so the per-message paths need not touch it.
    let mailboxMode: UInt8
    /// Where `ActorCell`'s instance lives, in bytes from the object's start (set once, by the
    /// initialiser; it fills padding, so the cell does not grow).
    var instanceOffset: UInt32 = 0
    var extras: CellExtras?
    var registryNext: AnyCell?
    unowned(unsafe) var registryPrevious: AnyCell?

    static let stoppedBit: UInt8 = 1
    static let restartRequestedBit: UInt8 = 2
    /// Set by a shutdown whose deadline passed while this actor was alive: it handles no
    /// further user message (each is dead-lettered with `.systemShutdown`).
    static let abandonedBit: UInt8 = 4

    static let startedFlag: UInt8 = 1
    static let stopRequestedFlag: UInt8 = 2
    static let crashRequestedFlag: UInt8 = 4
    static let suspendedFlag: UInt8 = 8
    static let invalidationCheckFlag: UInt8 = 16
    static let instanceReleasedFlag: UInt8 = 32
    static let unboundedMode: UInt8 = 0
    static let boundedMode: UInt8 = 1
    static let boundedDropOldestMode: UInt8 = 2

    init(system: ActorSystem, config: CellConfig?) {
        self.system = system
        self.id = system.nextActorID()
        self.config = config
        if let config, config.capacity > 0 {
            mailboxMode = config.overflow == .dropOldest ? AnyCell.boundedDropOldestMode : AnyCell.boundedMode
        } else {
            mailboxMode = AnyCell.unboundedMode
        }
        self.mailbox = CTroupe_mailbox_create(nil, config?.tracksDepth ?? false, mailboxMode == AnyCell.boundedDropOldestMode)!
        CTroupe_mailbox_set_owner(mailbox, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        // Non-empty mailboxes are always scheduled, and scheduled cells are retained, so a
        // released cell's mailbox is empty.
        CTroupe_mailbox_destroy(mailbox)
    }

    var address: ActorAddress { ActorAddress(id: id, name: config?.name) }
    var isStopped: Bool { lifecycle.load(ordering: .acquiring) & AnyCell.stoppedBit != 0 }
    var isStoppedOrAbandoned: Bool { lifecycle.load(ordering: .acquiring) & (AnyCell.stoppedBit | AnyCell.abandonedBit) != 0 }

    /// Why the actor stopped; `nil` while it runs. Reliable on the actor itself, and on other
    /// threads once the cell has left the registry (see ``CellExtras``).
    var terminationReason: TerminationReason? {
        isStopped ? (extras?.stopReason ?? .stopped) : nil
    }

    /// Runs one turn: at most `limit` envelopes. Returns whether the caller keeps the
    /// scheduling right (more is pending) and must run or queue the cell again. Returning
    /// false while suspended also keeps the right: the restart timer reschedules the cell.
    /// Called only by the holder of the scheduling right.
    func runTurn(buffer: UnsafeMutablePointer<UnsafeMutablePointer<CTroupe_envelope>?>, limit: Int) -> Bool {
        fatalError("subclass")
    }

    /// Enqueues a system message; never dropped. Any thread.
    final func sendSystem(_ message: SystemMessage) {
        let envelope = Envelope.make(message, kind: UInt32(CTroupe_envelope_kind_system), askToken: nil)
        if CTroupe_mailbox_push(mailbox, envelope.raw, true) {
            system.schedule(self)
        }
    }

    /// Asks the actor to stop after the messages already in its mailbox.
    final func requestStop(_ reason: TerminationReason = .stopped) { sendSystem(.stop(reason)) }

    /// Asks the actor to restart before its next message (after a pause of `delay`), keeping
    /// its mailbox. Any thread. False when it cannot: stopped, or spawned without a factory.
    final func requestRestart(reason: any Error, after delay: Duration) -> Bool {
        guard let config, config.factory != nil, !isStopped else { return false }
        config.requestRestart(RestartRequest(reason: reason, delay: delay))
        lifecycle.bitwiseOr(AnyCell.restartRequestedBit, ordering: .releasing)
        sendSystem(.wake)
        return true
    }

    final var extrasCreatingIfNeeded: CellExtras {
        if let extras { return extras }
        let created = CellExtras()
        extras = created
        return created
    }
}

/// The lease shared by every ``ActorRef`` of a self-invalidating actor: when the last ref
/// goes, the lease goes, and the actor is told to check whether it should stop.
final class InvalidationLease: Sendable {
    let cell: AnyCell
    init(cell: AnyCell) { self.cell = cell }
    deinit {
        if !cell.isStopped { cell.sendSystem(.referencesReleased) }
    }
}

/// Hands out the current lease of a self-invalidating actor. Any thread, under a lock
/// (creating refs of such actors is not a hot path).
final class SelfInvalidation: Sendable {
    private struct Slot: @unchecked Sendable {  // only touched under `current`'s lock
        weak var lease: InvalidationLease?
        /// The lease the spawner's ref will take, held from spawn until that ref exists.
        var spawnerHold: InvalidationLease?
    }
    private let current = Locked(Slot())

    /// Spawn, before the first turn is scheduled.
    func holdForSpawner(_ cell: AnyCell) {
        current.withLock { slot in
            let lease = InvalidationLease(cell: cell)
            slot.lease = lease
            slot.spawnerHold = lease
        }
    }

    /// Spawn, once the spawner's ref holds the lease.
    func releaseSpawnerHold() {
        let held = current.withLock { slot in
            defer { slot.spawnerHold = nil }
            return slot.spawnerHold
        }
        withExtendedLifetime(held) {}
    }

    func lease(for cell: AnyCell) -> InvalidationLease {
        current.withLock { slot in
            if let lease = slot.lease { return lease }
            let lease = InvalidationLease(cell: cell)
            slot.lease = lease
            return lease
        }
    }

    /// Whether some ref still holds the lease.
    var isReferenced: Bool { current.withLock { $0.lease != nil } }
}

/// Resumes an actor suspended by a delayed restart. The actor's turn and the resumption race
/// (the delay can be zero-ish, and shutdown resumes early), so they meet through `handoff`:
/// 0 the suspending turn still runs, 1 it ended and left the cell parked, 2 resumed. Whoever
/// comes second reschedules (the timer) or keeps running (the turn). Exactly one does.
final class ResumeEntry: TimerEntry, @unchecked Sendable {  // `cell` is immutable; `handoff` is atomic
    let cell: AnyCell
    private let handoff = Atomic<UInt8>(0)

    init(cell: AnyCell) { self.cell = cell }

    /// Timer thread: the delay is over.
    override func fire() {
        guard cell.system.forgetSuspended(self) else { return }
        resumeNow()
    }

    /// Ends the pause; called once, by ``fire()`` or by shutdown (which cuts pauses short).
    func resumeNow() {
        if handoff.exchange(2, ordering: .acquiringAndReleasing) == 1 { cell.system.schedule(cell) }
    }

    /// The suspending turn ends: true when the resumption already came (keep running).
    func turnEnded() -> Bool {
        !handoff.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged
    }
}

/// A timer of one actor: delivers `message` to it after a delay, once or periodically.
final class ActorTimer<Message: Sendable>: TimerEntry, @unchecked Sendable {  // immutable but for the atomics; `deadline` belongs to DeadlineTimer
    let key: TimerKey
    let message: Message
    /// Nanoseconds between ticks; 0 for a single timer.
    let interval: Int64
    let cell: AnyCell
    let cancelled = Atomic<Bool>(false)
    /// A tick is in the mailbox and not yet handled: further ticks are skipped rather than piled up.
    let inFlight = Atomic<Bool>(false)

    init(key: TimerKey, message: Message, interval: Int64, cell: AnyCell) {
        self.key = key
        self.message = message
        self.interval = interval
        self.cell = cell
    }

    /// Timer thread, outside the timer's lock.
    override func fire() {
        guard !cancelled.load(ordering: .acquiring) else { return }
        if !inFlight.exchange(true, ordering: .acquiringAndReleasing) {
            cell.sendSystem(.timerFired(self))
        }
        if interval > 0 {
            // Fixed rate: the next tick is due one interval after this one was, not after now.
            let now = CTroupe_monotonic_ns()
            var next = deadline + interval
            if next <= now { next = now + interval }
            cell.system.timer.schedule(self, atNanoseconds: next)
        }
    }

    /// Actors stop (cancelling their timers) before the timer thread does.
    override func fireAtShutdown() {}
}

/// An actor timer's key. `Int` and `String` keys, the usual ones, are stored and hashed as
/// themselves (a 24-byte table slot, no `AnyHashable` witness calls); any other key is kept
/// as `AnyHashable` in a box.
enum TimerKey: Hashable {
    case int(Int)
    case string(String)
    case other(AnyKey)

    final class AnyKey: Hashable {
        let value: AnyHashable
        init(_ value: AnyHashable) { self.value = value }
        static func == (lhs: AnyKey, rhs: AnyKey) -> Bool { lhs.value == rhs.value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
    }

    @inline(__always)
    init<Key: Hashable & Sendable>(_ key: Key) {
        if Key.self == Int.self {
            self = .int(unsafeBitCast(key, to: Int.self))
        } else if Key.self == String.self {
            self = .string(unsafeBitCast(key, to: String.self))
        } else {
            self = TimerKey(normalizing: AnyHashable(key))
        }
    }

    /// Any other key, including one already erased to `AnyHashable`. AnyHashable makes
    /// integers of every width equal by value, so integer keys all become `.int`.
    private init(normalizing hashable: AnyHashable) {
        if let integer = hashable.base as? any BinaryInteger, let value = Int(exactly: integer) {
            self = .int(value)
        } else if let string = hashable.base as? String {
            self = .string(string)
        } else {
            self = .other(AnyKey(hashable))
        }
    }
}

/// Maps a ``Terminated`` notice to a watcher's message type.
final class NoticeMapping<Message> {
    let map: (Terminated) -> Message
    init(_ map: @escaping (Terminated) -> Message) { self.map = map }
}

/// A cell that accepts `Message`: the typed send path, independent of the actor's definition.
class MailboxCell<Message: Sendable>: AnyCell, @unchecked Sendable {  // inherits AnyCell's contract
    /// The send path. Any thread; wait-free apart from the envelope allocator's rare refill.
    final func send(_ message: consuming Message, askToken: UnsafeMutableRawPointer? = nil) -> TellOutcome {
        if _slowPath(lifecycle.load(ordering: .relaxed) != 0 || !system.isAccepting || mailboxMode != AnyCell.unboundedMode) {
            return sendSlowly(message, askToken: askToken)
        }
        let envelope = Envelope.make(message, kind: UInt32(CTroupe_envelope_kind_user), askToken: askToken)
        if CTroupe_mailbox_push(mailbox, envelope.raw, false) {
            system.schedule(self)
        }
        return .enqueued
    }

    /// Stopped recipient, shutdown, or a bounded mailbox.
    private func sendSlowly(_ message: consuming Message, askToken: UnsafeMutableRawPointer?) -> TellOutcome {
        // Shutdown first: once it began, every refusal says so, whether or not the
        // recipient has stopped yet.
        if !system.isAccepting {
            return reject(message, .systemShutdown, askToken: askToken)
        }
        if lifecycle.load(ordering: .relaxed) & AnyCell.stoppedBit != 0 {
            return reject(message, .recipientStopped, askToken: askToken)
        }
        var outcome = TellOutcome.enqueued
        var reserved = false
        if mailboxMode != AnyCell.unboundedMode, let config {
            // The reservation never takes the depth above the capacity (CTroupe.h), so a bounded
            // mailbox holds at most `capacity` user messages at every moment.
            let capacity = Int64(config.capacity)
            if !CTroupe_mailbox_try_reserve(mailbox, capacity) {
                switch config.overflow {
                case .dropNewest, .fail:
                    return reject(message, .mailboxFull(config.overflow), askToken: askToken)
                case .dropOldest:
                    // Make room now, on the sender's thread: the oldest pending user message is
                    // taken out and dead-lettered before this send returns.
                    repeat {
                        if let dropped = CTroupe_mailbox_drop_oldest(mailbox) {
                            deadLetter(Envelope(raw: dropped), .mailboxFull(.dropOldest))
                            outcome = .enqueuedDroppingOldest
                        } else {
                            // Full of reservations whose envelopes are still being pushed.
                            CTroupe_cpu_relax()
                        }
                    } while !CTroupe_mailbox_try_reserve(mailbox, capacity)
                }
            }
            reserved = true
        }
        let envelope = Envelope.make(message, kind: UInt32(CTroupe_envelope_kind_user), askToken: askToken)
        if CTroupe_mailbox_push(mailbox, envelope.raw, reserved) {
            system.schedule(self)
        }
        return outcome
    }

    private func reject(_ message: consuming Message, _ reason: DeadLetterReason, askToken: UnsafeMutableRawPointer?) -> TellOutcome {
        // Counted first: an asker that reads the count after its error sees this dead letter.
        let kept = message
        system.deadLetters.record(reason, recipient: address, message: kept)
        if let askToken {
            Unmanaged<AskStateBase>.fromOpaque(askToken).takeRetainedValue().failDelivery(reason)
        }
        return .deadLettered(reason)
    }

    // Operations of the actor's own context that depend on its message type; ActorCell
    // implements them. Called only by the holder of the scheduling right.
    func startTimer(key: TimerKey, message: Message, delay: Duration, interval: Duration?) { fatalError("subclass") }
    func cancelTimer(key: TimerKey) { fatalError("subclass") }
    func watch(_ target: AnyCell, mapping: NoticeMapping<Message>) { fatalError("subclass") }
    func unwatch(_ target: AnyCell) { fatalError("subclass") }

    /// Dead-letters a user envelope its caller owns: popped by the consumer, or taken out of a
    /// full drop-oldest mailbox by a sender.
    final func deadLetter(_ envelope: Envelope, _ reason: DeadLetterReason) {
        let token = envelope.askToken
        let message = envelope.take(as: Message.self)
        // Counted first: an asker that reads the count after its error sees this dead letter.
        system.deadLetters.record(reason, recipient: address, message: message)
        if let token {
            Unmanaged<AskStateBase>.fromOpaque(token).takeRetainedValue().failDelivery(reason)
        }
    }
}

/// The cell of one actor definition: owns the instance and runs its turns.
final class ActorCell<Definition: ActorDefinition>: MailboxCell<Definition.Message>, @unchecked Sendable {  // inherits AnyCell's contract
    typealias Message = Definition.Message

    /// Touched only by the holder of the scheduling right, which the mailbox protocol makes
    /// exclusive; the dynamic exclusivity check would cost a runtime call per message.
    /// `nil` once the actor has stopped: the instance is released on the actor's own thread
    /// right after `stopped` runs (``releaseInstance()``), so that whatever it held (a pending
    /// ``Reply``, a connection) goes at once, not when the last ``ActorRef`` does.
    @exclusivity(unchecked) var instance: Definition?

    init(system: ActorSystem, instance: consuming Definition, config: CellConfig?) {
        self.instance = instance
        super.init(system: system, config: config)
        let base = UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque())
        let offset = withUnsafeMutablePointer(to: &self.instance) { UnsafeMutableRawPointer($0) - base }
        instanceOffset = UInt32(offset)
    }

    /// The spawn factory, cast back to its type: only when restarting (a dynamic cast).
    private var factory: (@Sendable () -> Definition)? { config?.factory as? @Sendable () -> Definition }
    private var isRestartable: Bool { config?.factory != nil }

    /// Runs `body` on the instance. A stateless (zero-sized) definition is used through a
    /// local copy instead: ThreadSanitizer reports accesses to a zero-sized stored property at
    /// the object's base address, which other threads legitimately touch (false races), and a
    /// value without state has nothing to write back.
    ///
    /// The instance is reached through its address (`instanceOffset` from the object's start;
    /// an object never moves), where the optional's `.some(x)` keeps `x`: unwrapping the
    /// optional in this unspecialised generic code would look up the metadata of
    /// `Optional<Definition>` on every message (a hash-table search in the runtime, ~500
    /// instructions). Only called while the instance exists (before the actor stops).
    @inline(__always)
    private func withInstance<Result>(_ body: (inout Definition) throws -> Result) rethrows -> Result {
        assert(flags & AnyCell.instanceReleasedFlag == 0, "the instance of a stopped actor was used")
        let typed = (UnsafeMutableRawPointer(Unmanaged.passUnretained(self).toOpaque()) + Int(instanceOffset))
            .assumingMemoryBound(to: Definition.self)
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
        flags |= AnyCell.instanceReleasedFlag
        CTroupe_set_releasing_stopped_actor(true)
        instance = nil
        CTroupe_set_releasing_stopped_actor(false)
    }

    private var context: ActorContext<Message> { ActorContext(cell: self) }

    override func runTurn(buffer: UnsafeMutablePointer<UnsafeMutablePointer<CTroupe_envelope>?>, limit: Int) -> Bool {
        if _slowPath(flags & (AnyCell.startedFlag | AnyCell.suspendedFlag) != AnyCell.startedFlag) {
            if !beginTurnSlowly() { return suspensionTurnEnded() }
        }
        var handled = 0
        // A bounded mailbox gives up its envelopes one at a time, so that none wait in a popped
        // batch beyond the capacity.
        let perPop = mailboxMode == AnyCell.unboundedMode ? limit : 1
        while handled < limit {
            let count = CTroupe_mailbox_pop_batch(mailbox, buffer, min(perPop, limit - handled))
            if count == 0 { break }
            for index in 0..<count {
                handle(Envelope(raw: buffer[index].unsafelyUnwrapped))
                if _slowPath(flags & AnyCell.suspendedFlag != 0) {
                    // A delayed restart began: keep the rest of the batch for the fresh instance.
                    for rest in (index + 1)..<count { extras!.held.append(buffer[rest].unsafelyUnwrapped) }
                    return suspensionTurnEnded()
                }
            }
            handled += count
        }
        if _slowPath(flags & AnyCell.invalidationCheckFlag != 0) { checkSelfInvalidation() }
        return CTroupe_mailbox_finish_turn(mailbox)
    }

    /// First turn (runs `started`) or the turn that ends a suspension. Returns false when the
    /// actor is (again) suspended.
    private func beginTurnSlowly() -> Bool {
        if flags & AnyCell.startedFlag == 0 {
            flags |= AnyCell.startedFlag
            withInstance { $0.started(context: context) }
            system.hooks.actorStarted(address)
            if flags & AnyCell.stopRequestedFlag != 0 { stopNow(.stopped) }
            return true
        }
        // Resuming after a delayed restart's pause.
        flags &= ~AnyCell.suspendedFlag
        let extras = extras!
        guard let suspension = extras.suspension else { return true }
        extras.suspension = nil
        // A restart requested meanwhile is covered by this one.
        if lifecycle.bitwiseAnd(~AnyCell.restartRequestedBit, ordering: .acquiringAndReleasing).oldValue & AnyCell.restartRequestedBit != 0 {
            _ = config?.takeRestartRequest()
        }
        if lifecycle.load(ordering: .relaxed) & AnyCell.stoppedBit == 0 {
            replaceInstance(reason: suspension.reason)
            retryFailingMessage()
        }
        while !extras.held.isEmpty && flags & AnyCell.suspendedFlag == 0 {
            handle(Envelope(raw: extras.held.removeFirst()))
        }
        return flags & AnyCell.suspendedFlag == 0
    }

    /// The turn of a suspended actor ends; see ``ResumeEntry``.
    private func suspensionTurnEnded() -> Bool {
        extras!.suspension!.resume.turnEnded()
    }

    @inline(__always)
    private func handle(_ envelope: Envelope) {
        if _slowPath(envelope.isSystem) {
            handleSystem(envelope.take(as: SystemMessage.self))
            return
        }
        if _slowPath(lifecycle.load(ordering: .relaxed) != 0) {
            let bits = lifecycle.load(ordering: .acquiring)
            if bits & AnyCell.stoppedBit != 0 {
                deadLetter(envelope, .recipientStopped)
                return
            }
            if bits & AnyCell.abandonedBit != 0 {
                deadLetter(envelope, .systemShutdown)
                return
            }
            if restartAsRequested() {
                // A delayed restart began: this envelope goes first when the actor resumes.
                extras!.held.insert(envelope.raw, at: 0)
                return
            }
        }
        let token = envelope.askToken
        deliver(envelope.take(as: Message.self), token: token)
    }

    /// Runs the handler on one user message (from the mailbox, a timer, a notice or a retry).
    @inline(__always)
    private func deliver(_ message: Message, token: UnsafeMutableRawPointer?, isRetry: Bool = false) {
        do {
            try withInstance { try $0.receive(message, context: context) }
        } catch {
            failed(error, message: message, token: token, isRetry: isRetry)
            if _slowPath(flags & AnyCell.stopRequestedFlag != 0) { stopNow(.stopped) }
            return
        }
        if _slowPath(flags & (AnyCell.stopRequestedFlag | AnyCell.crashRequestedFlag) != 0) {
            if flags & AnyCell.crashRequestedFlag != 0 {
                flags &= ~AnyCell.crashRequestedFlag
                let error = extras?.pendingCrash ?? RestartRequested()
                extras?.pendingCrash = nil
                failed(error, message: message, token: token, isRetry: isRetry)
                if flags & AnyCell.stopRequestedFlag != 0 { stopNow(.stopped) }
                return
            }
            stopNow(.stopped)
        }
        // Handled: the envelope's retain of the ask state ends here.
        if let token { Unmanaged<AskStateBase>.fromOpaque(token).release() }
    }

    private func handleSystem(_ message: SystemMessage) {
        switch message {
        case .stop(let reason):
            if !isStopped { stopNow(reason) }
        case .childStopped(let child):
            extras?.children[ObjectIdentifier(child)] = nil
        case .wake:
            if lifecycle.load(ordering: .relaxed) == AnyCell.restartRequestedBit { _ = restartAsRequested() }
        case .watchedTerminated(let notice, let targetID):
            guard !isStoppedOrAbandoned, let watch = extras?.watching.removeValue(forKey: targetID) else { return }
            deliver(unsafeDowncast(watch.mapping, to: NoticeMapping<Message>.self).map(notice), token: nil)
        case .timerFired(let entry):
            let timer = unsafeDowncast(entry, to: ActorTimer<Message>.self)
            timer.inFlight.store(false, ordering: .releasing)
            guard !isStoppedOrAbandoned, let extras, extras.timers[timer.key] === timer else { return }
            if timer.interval == 0 { extras.timers[timer.key] = nil }
            deliver(timer.message, token: nil)
        case .referencesReleased:
            flags |= AnyCell.invalidationCheckFlag
        }
    }

    // MARK: Failure and restart

    private func failed(_ error: any Error, message: Message, token: UnsafeMutableRawPointer?, isRetry: Bool) {
        let extras = extrasCreatingIfNeeded
        extras.failureCount += 1
        let failure = ActorFailure(actor: address, error: error, failureCount: extras.failureCount, wasRetry: isRetry)
        let decider = config?.failureDecider ?? system.configuration.failureDecider
        var directive = decider(failure)
        if directive.action == .restart && !isRestartable {
            system.logger.error("\(failure); restart requested but the actor was spawned without a factory (use spawn(options:factory:)); stopping")
            directive = .stop
        }
        system.hooks.actorFailed(failure, directive)
        if directive.failingMessage == .retryOnce && !isRetry {
            extras.retry = (message, token)
        } else {
            system.deadLetters.record(.handlerFailed("\(error)"), recipient: address, message: message)
            // An asker learns the handler's error, not just that its Reply was dropped (after
            // the count, so that it can read the count).
            if let token {
                let state = Unmanaged<AskStateBase>.fromOpaque(token)
                state.takeUnretainedValue().failHandler(error)
                state.release()
            }
        }
        switch directive.action {
        case .resume:
            system.logger.warning("\(failure); resuming")
        case .stop:
            system.logger.error("\(failure); stopping the actor")
            stopNow(.failed(error))
        case .restart:
            if directive.restartDelay > .zero, let resume = system.suspend(self, for: directive.restartDelay) {
                system.logger.warning("\(failure); restarting in \(directive.restartDelay)")
                extras.suspension = (error, resume)
                flags |= AnyCell.suspendedFlag
                return
            }
            system.logger.warning("\(failure); restarting")
            replaceInstance(reason: error)
            retryFailingMessage()
        }
    }

    /// The restart another thread asked for (``AnyCell/requestRestart(reason:after:)``).
    /// Returns true when it is delayed: the actor is now suspended.
    private func restartAsRequested() -> Bool {
        let before = lifecycle.bitwiseAnd(~AnyCell.restartRequestedBit, ordering: .acquiringAndReleasing).oldValue
        guard before & AnyCell.restartRequestedBit != 0, isRestartable else { return false }
        let request = config?.takeRestartRequest()
        let reason: any Error = request?.reason ?? RestartRequested()
        if let delay = request?.delay, delay > .zero, let resume = system.suspend(self, for: delay) {
            system.logger.info("\(address): restart requested (\(reason)); restarting in \(delay)")
            extrasCreatingIfNeeded.suspension = (reason, resume)
            flags |= AnyCell.suspendedFlag
            return true
        }
        replaceInstance(reason: reason)
        return false
    }

    /// Replaces the instance with a fresh one from the factory; the mailbox is untouched.
    private func replaceInstance(reason: any Error) {
        guard let factory else { return }
        withInstance { $0.willRestart(reason: reason, context: context) }
        cancelTimers()
        let fresh = factory()
        if MemoryLayout<Definition>.size != 0 { instance = fresh }
        withInstance { $0.didRestart(reason: reason, context: context) }
        system.hooks.actorRestarted(address, reason)
        if flags & AnyCell.stopRequestedFlag != 0 { stopNow(.stopped) }
    }

    private func retryFailingMessage() {
        guard let retry = extras?.retry else { return }
        extras?.retry = nil
        if isStopped {
            system.deadLetters.record(.recipientStopped, recipient: address, message: retry.message as! Message)
            if let token = retry.token {
                Unmanaged<AskStateBase>.fromOpaque(token).takeRetainedValue().failDelivery(.recipientStopped)
            }
            return
        }
        deliver(retry.message as! Message, token: retry.token, isRetry: true)
    }

    // MARK: Timers, watches, self-invalidation (called from ActorContext, on the actor)

    override func startTimer(key: TimerKey, message: Message, delay: Duration, interval: Duration?) {
        cancelTimer(key: key)
        // An interval of zero or less ends the timer after its next tick, as NNKit's polling
        // object does: it is a single timer. Positive intervals are at least 1 µs.
        let intervalNanoseconds = interval.map { $0 > .zero ? max(1_000, $0.nanoseconds) : 0 } ?? 0
        let timer = ActorTimer(key: key, message: message, interval: intervalNanoseconds, cell: self)
        extrasCreatingIfNeeded.timers[key] = timer
        system.timer.schedule(timer, after: delay)
    }

    override func cancelTimer(key: TimerKey) {
        guard let entry = extras?.timers.removeValue(forKey: key) else { return }
        let timer = unsafeDowncast(entry, to: ActorTimer<Message>.self)
        timer.cancelled.store(true, ordering: .releasing)
        system.timer.cancel(timer)
    }

    private func cancelTimers() {
        guard let extras, !extras.timers.isEmpty else { return }
        for key in Array(extras.timers.keys) { cancelTimer(key: key) }
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

    /// At the end of a turn after a lease was released: stop when no ref and no message remain.
    private func checkSelfInvalidation() {
        guard let invalidation = config?.selfInvalidation, !invalidation.isReferenced else {
            flags &= ~AnyCell.invalidationCheckFlag
            return
        }
        // A non-empty mailbox brings another turn, which checks again.
        guard CTroupe_mailbox_is_empty(mailbox), !isStopped else { return }
        flags &= ~AnyCell.invalidationCheckFlag
        stopNow(.selfInvalidated)
    }

    /// Stops the actor now: cancels its timers, runs `stopped`, stops children, tells the
    /// parent and the watchers, leaves the registry. Later envelopes are dead-lettered by the
    /// turns that pop them.
    private func stopNow(_ reason: TerminationReason) {
        flags &= ~AnyCell.stopRequestedFlag
        if case .stopped = reason {} else { extrasCreatingIfNeeded.stopReason = reason }
        lifecycle.bitwiseOr(AnyCell.stoppedBit, ordering: .releasing)
        cancelTimers()
        withInstance { $0.stopped(context: context) }
        if let extras {
            for child in extras.children.values { child.requestStop(.parentStopped) }
            extras.children.removeAll()
            extras.parent?.sendSystem(.childStopped(self))
            for (_, watch) in extras.watching { system.removeWatcher(self, from: watch.target) }
            extras.watching.removeAll()
            if let retry = extras.retry {
                extras.retry = nil
                system.deadLetters.record(.recipientStopped, recipient: address, message: retry.message as! Message)
                if let token = retry.token {
                    Unmanaged<AskStateBase>.fromOpaque(token).takeRetainedValue().failDelivery(.recipientStopped)
                }
            }
        }
        releaseInstance()
        system.hooks.actorStopped(address)
        system.unregister(self, reason: reason)
        config?.dedicated?.requestExit()
    }
}

extension Duration {
    /// Whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product &+ attoseconds / 1_000_000_000
    }
}
