import Troupe

/// A general-purpose test actor: records every message it handles, and its lifecycle, and can
/// hold its handler at a ``Gate`` for chosen messages (to keep a worker busy or to let a
/// mailbox fill up deterministically).
///
/// Each handled message is recorded in `received` *before* the handler waits at the gate, and
/// in `events` as "message" (with "started" / "stopped" around them).
public struct Probe<Value: Sendable>: ActorDefinition {
    public typealias Message = Value

    public let received: Recorder<Value>
    public let events: Recorder<String>
    public let gate: Gate?
    public let holdWhen: @Sendable (Value) -> Bool

    public init(
        received: Recorder<Value> = Recorder(),
        events: Recorder<String> = Recorder(),
        gate: Gate? = nil,
        holdWhen: @escaping @Sendable (Value) -> Bool = { _ in true }
    ) {
        self.received = received
        self.events = events
        self.gate = gate
        self.holdWhen = holdWhen
    }

    public mutating func started(context: ActorContext<Value>) { events.append("started") }

    public mutating func receive(_ message: Value, context: ActorContext<Value>) {
        received.append(message)
        events.append("message")
        if let gate, holdWhen(message) { gate.enter() }
    }

    public mutating func stopped(context: ActorContext<Value>) { events.append("stopped") }
}
