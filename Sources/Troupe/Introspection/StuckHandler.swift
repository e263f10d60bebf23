import Logging

/// A handler (or a Swift job on a Troupe executor) that ran longer than the watchdog's
/// threshold (``ActorSystem/Introspection/stuckHandlerThreshold``), reported when the watchdog
/// first sees it past the threshold (``Phase-swift.enum/running``) and again once it has ended
/// (``Phase-swift.enum/finished``).
public struct StuckHandler: Sendable, CustomStringConvertible {
    /// Which report this is.
    public enum Phase: Sendable, Hashable {
        /// The handler has run past the threshold and is still running.
        case running
        /// The handler reported as running has ended (or its actor stopped).
        case finished
    }

    public let phase: Phase
    /// The actor whose handler it is (for a Swift executor's job lane, the lane's address).
    public let actor: ActorAddress
    /// Whether it is a Swift job on a Troupe executor rather than an actor's handler.
    public let isSwiftJob: Bool
    /// The actor's message type (for a handler actor, ``AnyMessage``), or "Swift job".
    public let messageType: String
    /// The shared worker it blocks (0-based).
    public let worker: Int
    /// How long it has run: for ``Phase-swift.enum/running``, at least this long (measured from
    /// the watchdog's first sight of it, so short by up to one sampling step); for
    /// ``Phase-swift.enum/finished``, how long it ran, to within one sampling step.
    public let elapsed: Duration

    public var description: String {
        switch phase {
        case .running:
            "\(actor)'s handler of \(messageType) has been running on worker \(worker) for \(LatencyHistogram.format(elapsed))"
        case .finished:
            "\(actor)'s handler of \(messageType) on worker \(worker) finished after \(LatencyHistogram.format(elapsed))"
        }
    }

    /// The report as structured log metadata: `actor`, `message_type`, `worker`, `elapsed_ms`.
    public var logMetadata: Logger.Metadata {
        [
            "actor": "\(actor)", "message_type": "\(messageType)", "worker": "\(worker)",
            "elapsed_ms": "\(elapsed.nanoseconds / 1_000_000)",
        ]
    }
}

/// One sampled message's times (see ``ActorSystem/Introspection/samplingInterval``), for
/// ``SystemHooks/onMessageTimed(_:)``.
public struct MessageTiming: Sendable {
    /// The actor that handled it.
    public let actor: ActorAddress
    /// From its send (the envelope's allocation, right before the push) to its handler's start.
    public let timeInMailbox: Duration
    /// How long the handler ran.
    public let handlerDuration: Duration
}
