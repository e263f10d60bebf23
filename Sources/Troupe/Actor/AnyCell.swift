import Synchronization
internal import CTroupe

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
