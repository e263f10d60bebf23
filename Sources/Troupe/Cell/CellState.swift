#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
internal import CTroupe

/// The lifecycle bits of a cell, read by any thread (an `Atomic<UInt8>` holds their raw value).
struct Lifecycle: OptionSet {
    let rawValue: UInt8
    /// Set only by the holder of the scheduling right, when the actor stops; senders read it.
    static let stopped = Lifecycle(rawValue: 1)
    /// Set by any thread (``ActorRef/requestRestart(reason:after:)``), cleared by the right's holder.
    static let restartRequested = Lifecycle(rawValue: 2)
    /// Set by a shutdown whose deadline passed while this actor was alive: it handles no
    /// further user message (each is dead-lettered with `.systemShutdown`).
    static let abandoned = Lifecycle(rawValue: 4)
    /// Set once, by the initialiser of a Swift executor's job lane: a cell that runs jobs, not
    /// messages, and that the live-actor list does not hold, so its run-queue entries always
    /// carry a retain.
    static let jobLane = Lifecycle(rawValue: 8)
}

/// A cell's own state, touched only by the holder of the scheduling right. Usable from
/// inlinable code (the turn), so the flags are computed properties: a stored static would be
/// reached through a lazy-initialisation accessor from another module.
@usableFromInline
struct CellFlags: OptionSet {
    @usableFromInline let rawValue: UInt8
    @inlinable init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `started` ran.
    @inlinable static var started: CellFlags { CellFlags(rawValue: 1) }
    /// ``ActorContext/stop()`` was called in the current handler.
    @inlinable static var stopRequested: CellFlags { CellFlags(rawValue: 2) }
    /// ``ActorContext/crash(_:)`` was called in the current handler.
    @inlinable static var crashRequested: CellFlags { CellFlags(rawValue: 4) }
    /// Paused by a delayed restart.
    @inlinable static var suspended: CellFlags { CellFlags(rawValue: 8) }
    /// A self-invalidating actor's lease went: check at the end of the turn.
    @inlinable static var invalidationCheck: CellFlags { CellFlags(rawValue: 16) }
    /// The instance was released (the actor stopped).
    @inlinable static var instanceReleased: CellFlags { CellFlags(rawValue: 32) }
}

/// How a cell's mailbox admits user messages (copied from the config for the send path).
enum MailboxMode: UInt8 {
    case unbounded
    case bounded
    case boundedDroppingOldest
}
