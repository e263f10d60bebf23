import Logging

/// What a handler can do besides changing its own state: reach itself and its system, spawn
/// children, stop, and start asynchronous work whose result comes back as a message.
///
/// Use it only inside the handler or hook it was given to (on the actor's worker thread); it
/// is not `Sendable`. To talk to the actor from elsewhere, capture ``ref``.
public struct ActorContext<Message: Sendable> {
    /// Valid while the actor is handling a message or running a hook, which is the only time
    /// a context exists.
    unowned(unsafe) let cell: MailboxCell<Message>

    init(cell: MailboxCell<Message>) { self.cell = cell }

    /// The actor's own reference.
    public var ref: ActorRef<Message> { ActorRef(cell: cell) }

    /// The system the actor runs in.
    public var system: ActorSystem { cell.system }

    /// The actor's address.
    public var address: ActorAddress { cell.address }

    /// The system's logger, with the actor's address as metadata.
    public var logger: Logger {
        var logger = cell.system.logger
        logger[metadataKey: "actor"] = "\(cell.address)"
        return logger
    }

    /// Stops this actor once the current handler returns: `stopped` runs, children stop,
    /// messages still in the mailbox are dead-lettered.
    public func stop() { cell.flags |= AnyCell.stopRequestedFlag }

    /// Spawns a child: it stops when this actor stops.
    @discardableResult
    public func spawn<Child: ActorDefinition>(_ definition: sending Child, options: SpawnOptions = .default) -> ActorRef<Child.Message> {
        let child = cell.system.makeCell(definition, factory: nil, options: options, parent: cell)
        return ActorRef(cell: child)
    }

    /// Spawns a restartable child from a factory: it stops when this actor stops.
    @discardableResult
    public func spawn<Child: ActorDefinition>(options: SpawnOptions = .default, factory: @escaping @Sendable () -> Child) -> ActorRef<Child.Message> {
        let child = cell.system.makeCell(factory(), factory: factory, options: options, parent: cell)
        return ActorRef(cell: child)
    }

    /// Runs `work` off the actor (as a Swift task) and sends `message(result)` back to it, so
    /// the result is handled like any other message, on the actor, in order.
    public func run<Value: Sendable>(
        _ work: @escaping @Sendable () async throws -> Value,
        then message: @escaping @Sendable (Result<Value, any Error>) -> Message
    ) {
        let me = ref
        Task {
            let result: Result<Value, any Error>
            do { result = .success(try await work()) } catch { result = .failure(error) }
            me.tell(message(result))
        }
    }

    /// Asks another actor without blocking this one: the answer (or the ask's error) comes back
    /// as `message(result)`. No task is created; the reply itself enqueues the message.
    public func ask<Target: Sendable, Value: Sendable>(
        _ target: ActorRef<Target>,
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Target,
        then message: @escaping @Sendable (Result<Value, AskError>) -> Message
    ) {
        let me = ref
        target.ask(timeout: timeout, request) { result in me.tell(message(result)) }
    }
}
