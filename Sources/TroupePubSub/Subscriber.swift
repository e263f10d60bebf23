import Troupe

/// One subscriber of a topic. Immutable: the delivery closure holds the ref (or pool) and the
/// payload mapping.
struct Subscriber<Payload: Sendable>: Sendable {
    let id: UInt64
    let key: SubscriberKey
    let deliver: @Sendable (Payload) -> DeliveryAttempt
}

/// What one delivery attempt did.
enum DeliveryAttempt {
    case delivered
    case deadLettered
    /// The subscriber had stopped: nothing was sent (no dead letter).
    case skippedStopped
}
