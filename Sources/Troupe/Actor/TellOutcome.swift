/// What happened to a message handed to ``ActorRef/tell(_:)``.
public enum TellOutcome: Sendable, Hashable {
    /// In the mailbox; it will be handled or, if the actor stops first, dead-lettered.
    case enqueued
    /// In the mailbox, and to keep a full bounded mailbox at its capacity the oldest pending
    /// message will be dead-lettered instead of handled (policy ``MailboxOverflowPolicy/dropOldest``).
    case enqueuedDroppingOldest
    /// Not enqueued: it became a dead letter for this reason.
    case deadLettered(DeadLetterReason)

    /// Whether the message is in the mailbox.
    public var isEnqueued: Bool {
        switch self {
        case .enqueued, .enqueuedDroppingOldest: true
        case .deadLettered: false
        }
    }
}
