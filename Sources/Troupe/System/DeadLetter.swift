import Logging
import Synchronization

/// Why a message could not be delivered.
public enum DeadLetterReason: Sendable, Hashable, CustomStringConvertible {
    /// The recipient had stopped (or stopped before it reached the message).
    case recipientStopped
    /// The recipient has no handler for the message's type (per-type handler actors).
    case unhandledMessageType(String)
    /// The recipient's bounded mailbox was full; the policy says which message was dropped.
    case mailboxFull(MailboxOverflowPolicy)
    /// The system was shutting down.
    case systemShutdown
    /// The recipient's handler failed on it (threw or crashed); the error's description.
    case handlerFailed(String)

    /// The reason without its details, for counting.
    public var kind: Kind {
        switch self {
        case .recipientStopped: .recipientStopped
        case .unhandledMessageType: .unhandledMessageType
        case .mailboxFull: .mailboxFull
        case .systemShutdown: .systemShutdown
        case .handlerFailed: .handlerFailed
        }
    }

    /// Reasons without details, for counters.
    public enum Kind: Int, Sendable, CaseIterable {
        case recipientStopped, unhandledMessageType, mailboxFull, systemShutdown, handlerFailed
    }

    public var description: String {
        switch self {
        case .recipientStopped: "recipient stopped"
        case .unhandledMessageType(let type): "no handler for message type \(type)"
        case .mailboxFull(let policy): "mailbox full (\(policy))"
        case .systemShutdown: "system shutting down"
        case .handlerFailed(let error): "handler failed: \(error)"
        }
    }
}

/// A message that could not be delivered.
public struct DeadLetter: Sendable, CustomStringConvertible {
    /// The message itself.
    public let message: any Sendable
    /// Whom it was for.
    public let recipient: ActorAddress
    public let reason: DeadLetterReason

    public var description: String { "dead letter to \(recipient): \(type(of: message)) (\(reason))" }

    /// The dead letter as structured log metadata: `recipient`, `reason` (the kind),
    /// `detail` (the reason's description) and `message_type`.
    public var logMetadata: Logger.Metadata {
        [
            "recipient": "\(recipient)", "reason": "\(reason.kind)", "detail": "\(reason)",
            "message_type": "\(type(of: message))",
        ]
    }
}
