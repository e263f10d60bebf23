import Logging
import Synchronization
internal import CTroupe

/// System messages: they travel through the same mailbox as user messages (so they keep
/// their order relative to them) but bypass bounded-mailbox accounting and are never dropped.
enum SystemMessage {
    /// Stop after the messages enqueued before this one.
    case stop
    /// A child stopped; forget it.
    case childStopped(AnyCell)
}

/// Rarely used, immutable cell settings; `nil` for an actor spawned with default options, so
/// that the common cell stays small.
final class CellConfig: Sendable {
    let name: String?
    let capacity: Int                  // 0: unbounded
    let overflow: MailboxOverflowPolicy
    let droppedOldestDebt = Atomic<Int>(0)   // drop-oldest: messages the consumer must drop
    let dedicated: Worker?
    let failureDecider: FailureDecider?
    let tracksDepth: Bool
    /// The spawn factory (`@Sendable () -> Definition`), type-erased so the config stays
    /// non-generic; only read on restart.
    let factory: (any Sendable)?

    init(options: SpawnOptions, dedicated: Worker?, factory: (any Sendable)?) {
        name = options.name
        switch options.mailbox {
        case .unbounded:
            capacity = 0
            overflow = .fail
        case .bounded(let bound, let policy):
            precondition(bound > 0, "a bounded mailbox needs a capacity of at least 1, got \(bound)")
            capacity = bound
            overflow = policy
        }
        self.dedicated = dedicated
        failureDecider = options.failureDecider
        tracksDepth = options.tracksMailboxDepth || capacity > 0
        self.factory = factory
    }

    static func needed(for options: SpawnOptions, hasFactory: Bool) -> Bool {
        hasFactory || options.name != nil || options.mailbox != .unbounded || options.executor != .shared
            || options.failureDecider != nil || options.tracksMailboxDepth
    }
}

/// State only the actor's own turns touch: family links and failure count.
final class CellFamily {
    weak var parent: AnyCell?
    var children: [ObjectIdentifier: AnyCell] = [:]
    var failureCount = 0
}

/// The runtime side of an actor: mailbox, lifecycle and identity. The mailbox belongs to the
/// cell, not to the actor instance, so an instance can be replaced (restart) without losing
/// pending messages.
///
/// Thread-safety: `lifecycle` is written only by the thread holding the mailbox's scheduling
/// right and read by senders; `family`, `flags` and the subclass's instance are touched only by
/// that thread; `registryNext`/`registryPrevious` only under the system's registry lock. The
/// mailbox's scheduling right (CTroupe_mailbox_push / finish_turn) is what hands the cell from
/// one worker to the next with a happens-before edge.
class AnyCell: @unchecked Sendable {  // see the thread-safety contract above
    let mailbox: OpaquePointer
    let system: ActorSystem
    let id: UInt64
    let config: CellConfig?
    /// 0 running, 1 stopped.
    let lifecycle = Atomic<UInt8>(0)
    var flags: UInt8 = 0
    /// Copied from `config` so the per-message paths need not touch it.
    let mailboxMode: UInt8
    var family: CellFamily?
    var registryNext: AnyCell?
    unowned(unsafe) var registryPrevious: AnyCell?

    static let startedFlag: UInt8 = 1
    static let stopRequestedFlag: UInt8 = 2
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
        self.mailbox = CTroupe_mailbox_create(nil, config?.tracksDepth ?? false)!
        CTroupe_mailbox_set_owner(mailbox, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        // Non-empty mailboxes are always scheduled, and scheduled cells are retained, so a
        // released cell's mailbox is empty.
        CTroupe_mailbox_destroy(mailbox)
    }

    var address: ActorAddress { ActorAddress(id: id, name: config?.name) }
    var isStopped: Bool { lifecycle.load(ordering: .acquiring) != 0 }

    /// Runs one turn: at most `limit` envelopes. Returns whether the caller keeps the
    /// scheduling right (more is pending) and must run or queue the cell again.
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
    final func requestStop() { sendSystem(.stop) }

    final var family_: CellFamily {
        if let family { return family }
        let created = CellFamily()
        family = created
        return created
    }
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
        if lifecycle.load(ordering: .relaxed) != 0 {
            return reject(message, .recipientStopped, askToken: askToken)
        }
        var outcome = TellOutcome.enqueued
        var reserved = false
        if mailboxMode != AnyCell.unboundedMode, let config {
            let before = CTroupe_mailbox_reserve(mailbox, 1)
            if before >= config.capacity {
                switch config.overflow {
                case .dropNewest, .fail:
                    _ = CTroupe_mailbox_reserve(mailbox, -1)
                    return reject(message, .mailboxFull(config.overflow), askToken: askToken)
                case .dropOldest:
                    config.droppedOldestDebt.add(1, ordering: .relaxed)
                    outcome = .enqueuedDroppingOldest
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
        if let askToken {
            Unmanaged<AskStateBase>.fromOpaque(askToken).takeRetainedValue().failDelivery(reason)
        }
        let kept = message
        system.deadLetters.record(reason, recipient: address, message: kept)
        return .deadLettered(reason)
    }

    /// Dead-letters a popped user envelope. Consumer only.
    final func deadLetter(_ envelope: Envelope, _ reason: DeadLetterReason) {
        if let token = envelope.askToken {
            Unmanaged<AskStateBase>.fromOpaque(token).takeRetainedValue().failDelivery(reason)
        }
        let message = envelope.take(as: Message.self)
        system.deadLetters.record(reason, recipient: address, message: message)
    }
}

/// The cell of one actor definition: owns the instance and runs its turns.
final class ActorCell<Definition: ActorDefinition>: MailboxCell<Definition.Message>, @unchecked Sendable {  // inherits AnyCell's contract
    typealias Message = Definition.Message

    /// Touched only by the holder of the scheduling right, which the mailbox protocol makes
    /// exclusive; the dynamic exclusivity check would cost a runtime call per message.
    @exclusivity(unchecked) var instance: Definition

    init(system: ActorSystem, instance: consuming Definition, config: CellConfig?) {
        self.instance = instance
        super.init(system: system, config: config)
    }

    private var factory: (@Sendable () -> Definition)? { config?.factory as? @Sendable () -> Definition }

    /// Runs `body` on the instance. A stateless (zero-sized) definition is used through a
    /// local copy instead: ThreadSanitizer reports accesses to a zero-sized stored property at
    /// the object's base address, which other threads legitimately touch (false races), and a
    /// value without state has nothing to write back.
    @inline(__always)
    private func withInstance<Result>(_ body: (inout Definition) throws -> Result) rethrows -> Result {
        if MemoryLayout<Definition>.size == 0 {
            var stateless = instance
            return try body(&stateless)
        }
        return try body(&instance)
    }

    private var context: ActorContext<Message> { ActorContext(cell: self) }

    override func runTurn(buffer: UnsafeMutablePointer<UnsafeMutablePointer<CTroupe_envelope>?>, limit: Int) -> Bool {
        if _slowPath(flags & AnyCell.startedFlag == 0) {
            flags |= AnyCell.startedFlag
            withInstance { $0.started(context: context) }
            system.hooks.actorStarted(address)
            if flags & AnyCell.stopRequestedFlag != 0 { stopNow() }
        }
        var handled = 0
        while handled < limit {
            let count = CTroupe_mailbox_pop_batch(mailbox, buffer, limit - handled)
            if count == 0 { break }
            for index in 0..<count {
                handle(Envelope(raw: buffer[index].unsafelyUnwrapped))
            }
            handled += count
        }
        return CTroupe_mailbox_finish_turn(mailbox)
    }

    @inline(__always)
    private func handle(_ envelope: Envelope) {
        if _slowPath(envelope.isSystem) {
            handleSystem(envelope.take(as: SystemMessage.self))
            return
        }
        if _slowPath(lifecycle.load(ordering: .relaxed) != 0) {
            deadLetter(envelope, .recipientStopped)
            return
        }
        if _slowPath(mailboxMode == AnyCell.boundedDropOldestMode), let config,
           config.droppedOldestDebt.load(ordering: .relaxed) > 0 {
            config.droppedOldestDebt.subtract(1, ordering: .relaxed)
            deadLetter(envelope, .mailboxFull(.dropOldest))
            return
        }
        let token = envelope.askToken
        let message = envelope.take(as: Message.self)
        do {
            try withInstance { try $0.receive(message, context: context) }
        } catch {
            // An asker learns the handler's error, not just that its Reply was dropped.
            if let token { Unmanaged<AskStateBase>.fromOpaque(token).takeUnretainedValue().failHandler(error) }
            handleFailure(error)
        }
        // Handled: the envelope's retain of the ask state ends here.
        if let token { Unmanaged<AskStateBase>.fromOpaque(token).release() }
        if _slowPath(flags & AnyCell.stopRequestedFlag != 0) { stopNow() }
    }

    private func handleSystem(_ message: SystemMessage) {
        switch message {
        case .stop:
            if lifecycle.load(ordering: .relaxed) == 0 { stopNow() }
        case .childStopped(let child):
            family?.children[ObjectIdentifier(child)] = nil
        }
    }

    private func handleFailure(_ error: any Error) {
        let family = family_
        family.failureCount += 1
        let failure = ActorFailure(actor: address, error: error, failureCount: family.failureCount)
        let decider = config?.failureDecider ?? system.configuration.failureDecider
        let directive = decider(failure)
        system.hooks.actorFailed(failure, directive)
        switch directive {
        case .resume:
            system.logger.warning("\(failure); resuming")
        case .restart:
            guard let factory else {
                system.logger.error("\(failure); restart requested but the actor was spawned without a factory; stopping")
                stopNow()
                return
            }
            system.logger.warning("\(failure); restarting")
            let fresh = factory()
            if MemoryLayout<Definition>.size != 0 { instance = fresh }
            withInstance { $0.started(context: context) }
        case .stop:
            system.logger.error("\(failure); stopping the actor")
            stopNow()
        }
    }

    /// Stops the actor now: runs `stopped`, stops children, tells the parent, leaves the
    /// registry. Later envelopes are dead-lettered by the turns that pop them.
    private func stopNow() {
        flags &= ~AnyCell.stopRequestedFlag
        lifecycle.store(1, ordering: .releasing)
        withInstance { $0.stopped(context: context) }
        if let family {
            for child in family.children.values { child.requestStop() }
            family.children.removeAll()
            family.parent?.sendSystem(.childStopped(self))
        }
        system.hooks.actorStopped(address)
        system.unregister(self)
        config?.dedicated?.requestExit()
    }
}
