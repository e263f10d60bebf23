/// Runs a ``HandlerActor`` as an ``ActorDefinition``: the actor's state and its handler table,
/// built once per instance. Public only because ``HandlerActor`` names it as its runnable form;
/// not for direct use.
public struct _HandlerHost<Actor: HandlerActor>: ActorDefinition {
    public typealias Message = AnyMessage

    var actor: Actor
    let handlers: MessageHandlers<Actor>

    /// Sets the handlers up at once (on the spawner's thread for the first instance, in the
    /// factory call for a restarted one), throwing ``HandlerSetupError`` on a misused `setup`.
    init(validating actor: consuming Actor) throws(HandlerSetupError) {
        var actor = actor
        handlers = try MessageHandlers.built(for: &actor)
        self.actor = actor
    }

    public mutating func started(context: ActorContext<AnyMessage>) { actor.started(context: context) }

    public mutating func stopped(context: ActorContext<AnyMessage>) { actor.stopped(context: context) }

    public mutating func willRestart(reason: any Error, context: ActorContext<AnyMessage>) {
        actor.willRestart(reason: reason, context: context)
    }

    public mutating func didRestart(reason: any Error, context: ActorContext<AnyMessage>) {
        actor.didRestart(reason: reason, context: context)
    }

    public mutating func receive(_ message: AnyMessage, context: ActorContext<AnyMessage>) throws {
        let payloadType = type(of: message.payload)
        guard let handler = handlers.table[ObjectIdentifier(payloadType)] else {
            let reason = DeadLetterReason.unhandledMessageType("\(payloadType)")
            context.system.deadLetters.record(reason, recipient: context.address, message: message.payload)
            message.reply?.fail(.undeliverable(reason))
            return
        }
        // A failure reaches the asker through the cell (which may retry the message first).
        try handler(&actor, message.payload, message.reply, context)
    }
}

/// A definition that runs another type (a ``HandlerActor``): introspection names that type.
protocol HostsDefinition {
    static var hostedTypeName: String { get }
}

extension _HandlerHost: HostsDefinition {
    static var hostedTypeName: String { String(reflecting: Actor.self) }
}
