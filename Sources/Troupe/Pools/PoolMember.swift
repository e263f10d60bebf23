internal import TroupeLocks
import Synchronization
internal import CTroupe

/// One member: its ref and, for load-aware routing, the busy flag it sets while handling.
struct PoolMember<Message: Sendable> {
    let ref: ActorRef<Message>
    let load: MemberLoad?
}

/// A member's busy flag: written only by the member's own turns, read by routing senders.
final class MemberLoad: Sendable {
    let busy = Atomic<Bool>(false)
    // Keeps two members' flags off one cache line (the allocation rounds up to 64 bytes).
    private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0)
}

/// Wraps a member's definition to publish its busy state: two relaxed stores per message.
struct LoadReportingMember<Definition: ActorDefinition>: ActorDefinition {
    typealias Message = Definition.Message
    var definition: Definition
    let load: MemberLoad

    mutating func receive(_ message: Message, context: ActorContext<Message>) throws {
        load.busy.store(true, ordering: .relaxed)
        defer { load.busy.store(false, ordering: .relaxed) }
        try definition.receive(message, context: context)
    }

    mutating func started(context: ActorContext<Message>) { definition.started(context: context) }
    mutating func stopped(context: ActorContext<Message>) { definition.stopped(context: context) }
    mutating func willRestart(reason: any Error, context: ActorContext<Message>) {
        definition.willRestart(reason: reason, context: context)
    }
    mutating func didRestart(reason: any Error, context: ActorContext<Message>) {
        definition.didRestart(reason: reason, context: context)
    }
}
