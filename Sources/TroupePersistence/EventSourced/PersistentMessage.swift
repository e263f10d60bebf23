import Troupe

/// What a durable actor's mailbox carries: your commands, and the journal's answers to it
/// (which only this module can make). Send commands with ``PersistentRef``, or through the
/// underlying ``PersistentRef/actorRef`` as `.command(…)`.
public struct PersistentMessage<Command: Sendable>: Sendable {
    enum Kind: Sendable {
        case command(Command)
        /// The journal's recovery gate admitted this incarnation's recovery.
        case admitted(incarnation: UInt64)
        /// The journal claimed the writer for this incarnation (or failed to).
        case claimed(incarnation: UInt64, Result<JournalOutcome, any Error>)
        /// The history was read and decoded.
        case recovered(incarnation: UInt64, Result<RecoveredHistory, PersistenceError>)
        /// The current write's outcome.
        case written(incarnation: UInt64, Result<JournalOutcome, any Error>)
        /// A snapshot's outcome (failures are logged; the events are safe anyway).
        case snapshotWritten(incarnation: UInt64, Result<JournalOutcome, any Error>)
    }
    let kind: Kind

    /// A command for the actor.
    public static func command(_ command: Command) -> Self { Self(kind: .command(command)) }
}

/// A decoded history (or durable state), as the actor applies it. `State` and `Event` are
/// erased to keep ``PersistentMessage`` generic over the command only.
struct RecoveredHistory: @unchecked Sendable {  // made by the recovery task, then only read by the actor
    /// The snapshot's state, or the durable state.
    let state: Any?
    let events: [Any]
    /// The last event's number, or the durable state's revision.
    let lastSequenceNumber: Int64
}
