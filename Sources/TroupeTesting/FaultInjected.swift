import Troupe

/// Wraps an actor definition to inject faults at chosen messages: fail its handler at its Nth
/// message, drop messages that match, or stop it after its Nth message. The wrapped actor is
/// unchanged otherwise (same messages, same hooks).
///
/// ```swift
/// let flaky = system.spawn(FaultInjected(Counter(), faults: [.fail(atMessage: 3)]))
/// let lossy = system.spawn(FaultInjected(Counter(), faults: [.drop { if case .add = $0 { true } else { false } }]))
/// ```
public struct FaultInjected<Inner: ActorDefinition>: ActorDefinition {
    public typealias Message = Inner.Message

    /// One fault.
    public enum Fault: Sendable {
        /// The handler throws ``InjectedFault`` instead of handling the Nth message (from 1).
        case fail(atMessage: Int)
        /// Messages that match are not handled: lost on the way (counted in ``dropped``).
        case drop(where: @Sendable (Inner.Message) -> Bool)
        /// The actor stops right after handling its Nth message.
        case stop(afterMessage: Int)
    }

    /// The error an injected failure throws.
    public struct InjectedFault: Error, CustomStringConvertible {
        public let message: Int
        public var description: String { "fault injected at message \(message)" }
    }

    public var inner: Inner
    public let faults: [Fault]
    /// Messages received so far (handled, failed or dropped).
    public private(set) var received = 0
    /// Messages dropped so far.
    public private(set) var dropped = 0

    public init(_ inner: Inner, faults: [Fault]) {
        self.inner = inner
        self.faults = faults
    }

    public mutating func started(context: ActorContext<Message>) { inner.started(context: context) }
    public mutating func stopped(context: ActorContext<Message>) { inner.stopped(context: context) }
    public mutating func willRestart(reason: any Error, context: ActorContext<Message>) {
        inner.willRestart(reason: reason, context: context)
    }
    public mutating func didRestart(reason: any Error, context: ActorContext<Message>) {
        inner.didRestart(reason: reason, context: context)
    }

    public mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        received += 1
        for fault in faults {
            switch fault {
            case .fail(let nth) where nth == received:
                throw InjectedFault(message: received)
            case .drop(let matches) where matches(message):
                dropped += 1
                return
            default:
                continue
            }
        }
        try inner.receive(message, context: context)
        for case .stop(let nth) in faults where nth == received { context.stop() }
    }
}
