import Troupe

/// The actor that sweeps a region on a periodic timer: idle passivation, recency for the active
/// limit, and retiring vacant slots nobody used. Stops with its system.
struct RegionSweeper<Entity: Sendable>: ActorDefinition {
    enum Message: Sendable { case sweep }

    let region: EntityRegion<Entity>
    let interval: Duration

    /// A quarter of the idle timeout (so an activation is passivated between 1 and 1.25 times
    /// it), at least a millisecond and at most 30 s (the gate's 32-bit send count is compared
    /// between sweeps).
    static func interval(forIdleTimeout timeout: Duration) -> Duration {
        min(max(timeout / 4, .milliseconds(1)), .seconds(30))
    }

    /// The interval for a kind with an active limit and no idle timeout.
    static var recencyInterval: Duration { .seconds(1) }

    func started(context: ActorContext<Message>) {
        context.startPeriodicTimer(key: "sweep", message: .sweep, every: interval)
    }

    func receive(_ message: Message, context: ActorContext<Message>) {
        region.sweep()
    }
}
