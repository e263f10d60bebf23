internal import TroupeLocks
import Troupe

/// An actor a test talks to: what it receives waits in its inbox until the test takes it with
/// ``expectMessage(within:)``, and a test answers the asks it receives through the `Reply` in
/// the message. Like Akka's `TestProbe`, on a ``DeterministicSystem``'s virtual time.
///
/// ```swift
/// let probe = TestProbe<Order.Event>(in: system, name: "events")
/// shop.tell(.subscribe(probe.ref))
/// shop.tell(.order("tea"))
/// #expect(try probe.expectMessage() == .placed("tea"))
/// try probe.expectNoMessage(for: .seconds(5))     // virtual seconds: returns at once
/// ```
public final class TestProbe<Message: Sendable>: Sendable {
    /// The probe's ref: give it to the actors under test.
    public let ref: ActorRef<Message>
    private let system: DeterministicSystem
    private let inbox: Inbox

    /// Why an expectation failed.
    public enum Failure: Error, CustomStringConvertible {
        /// Nothing arrived within the time allowed (virtual time).
        case noMessage(probe: ActorAddress, within: Duration, system: String)
        /// A message arrived where none was expected.
        case unexpectedMessage(probe: ActorAddress, message: String, system: String)
        /// The message that arrived did not match.
        case mismatch(probe: ActorAddress, message: String, system: String)

        public var description: String {
            switch self {
            case .noMessage(let probe, let within, let system):
                "\(probe) received nothing within \(within) of virtual time; \(system)"
            case .unexpectedMessage(let probe, let message, let system):
                "\(probe) received \(message) where no message was expected; \(system)"
            case .mismatch(let probe, let message, let system):
                "\(probe) received \(message), which does not match; \(system)"
            }
        }
    }

    final class Inbox: Sendable {
        private let messages = Locked<[Message]>([])
        func append(_ message: Message) { messages.withLock { $0.append(message) } }
        func takeFirst() -> Message? { messages.withLock { $0.isEmpty ? nil : $0.removeFirst() } }
        var all: [Message] { messages.withLock { $0 } }
    }

    struct Recorder: ActorDefinition {
        let inbox: Inbox
        func receive(_ message: Message, context: ActorContext<Message>) { inbox.append(message) }
    }

    /// A probe actor in `system`.
    public init(in system: DeterministicSystem, name: String = "probe") {
        self.system = system
        let inbox = Inbox()
        self.inbox = inbox
        ref = system.spawn(Recorder(inbox: inbox), options: SpawnOptions(name: name))
    }

    /// Messages received and not yet taken.
    public var received: [Message] { inbox.all }

    /// Runs the system (moving virtual time up to `within`) until a message arrives, and takes
    /// it; throws ``Failure/noMessage(probe:within:system:)`` otherwise.
    @discardableResult
    public func expectMessage(within: Duration = .seconds(3)) throws(Failure) -> Message {
        let deadline = system.now + within
        while true {
            if let message = inbox.takeFirst() { return message }
            if system.step() != nil { continue }
            guard let next = system.nextEvent(), next <= deadline else {
                throw .noMessage(probe: ref.address, within: within, system: "\(system)")
            }
            system.driver.advance(by: max(.zero, next - system.now))
        }
    }

    /// ``expectMessage(within:)``, and checks the message with `matches`.
    @discardableResult
    public func expectMessage(
        within: Duration = .seconds(3), where matches: (Message) -> Bool
    ) throws(Failure) -> Message {
        let message = try expectMessage(within: within)
        guard matches(message) else { throw .mismatch(probe: ref.address, message: "\(message)", system: "\(system)") }
        return message
    }

    /// Runs the system for `duration` of virtual time and checks that nothing arrived.
    public func expectNoMessage(for duration: Duration) throws(Failure) {
        system.advance(by: duration)
        if let message = inbox.takeFirst() {
            throw .unexpectedMessage(probe: ref.address, message: "\(message)", system: "\(system)")
        }
    }
}

extension TestProbe where Message: Equatable {
    /// Takes the next message and checks that it equals `expected`.
    public func expectMessage(_ expected: Message, within: Duration = .seconds(3)) throws(Failure) {
        try expectMessage(within: within) { $0 == expected }
    }
}
