import Logging

/// What a handler can do besides changing its own state: reach itself and its system, spawn
/// children, stop, and start asynchronous work whose result comes back as a message.
///
/// Use it only inside the handler or hook it was given to (on the actor's worker thread); it
/// is not `Sendable`. To talk to the actor from elsewhere, capture ``ref``.
public struct ActorContext<Message: Sendable> {
    /// Valid while the actor is handling a message or running a hook, which is the only time
    /// a context exists.
    @usableFromInline unowned(unsafe) let cell: MailboxCell<Message>

    @inlinable init(cell: MailboxCell<Message>) { self.cell = cell }

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
    public func stop() {
        cell.assertInTurn("ActorContext.stop()")
        cell.flags.insert(.stopRequested)
    }

    /// Fails this actor with `error` once the current handler returns, exactly as if the
    /// handler had thrown it: the failure decider or supervisor
    /// decides between resume, restart and stop. For errors found where throwing is awkward.
    public func crash(_ error: any Error) {
        cell.assertInTurn("ActorContext.crash(_:)")
        cell.extrasCreatingIfNeeded.pendingCrash = error
        cell.flags.insert(.crashRequested)
    }

    /// Why the actor stopped: set in the `stopped` hook, `nil` while it runs.
    public var terminationReason: TerminationReason? { cell.terminationReason }

    // MARK: Death watch

    /// Watches `target`: when it stops, for any reason, this actor receives `notice(terminated)`
    /// as a message, exactly once, also when the target had already stopped. Watching again
    /// replaces the mapping; ``unwatch(_:)`` cancels, and no notice arrives after it. Watches
    /// end when this actor stops and are kept across its restarts.
    public func watch<Target: Sendable>(_ target: ActorRef<Target>, notice: @escaping (Terminated) -> Message) {
        cell.assertInTurn("ActorContext.watch(_:notice:)")
        cell.watch(target.cell, mapping: NoticeMapping(notice))
    }

    /// Stops watching `target`; a notice already on its way is discarded.
    public func unwatch<Target: Sendable>(_ target: ActorRef<Target>) {
        cell.assertInTurn("ActorContext.unwatch(_:)")
        cell.unwatch(target.cell)
    }

    // MARK: Timers

    /// Sends `message` to this actor once, after `delay`, under `key`. A timer with the same
    /// key is replaced (its pending tick discarded). Timers are cancelled when the actor stops
    /// or restarts. All timers of a system share one timing thread (a heap of deadlines).
    public func startSingleTimer(key: some Hashable & Sendable, message: Message, after delay: Duration) {
        cell.assertInTurn("ActorContext.startSingleTimer")
        cell.startTimer(key: TimerKey(key), message: message, delay: delay, interval: nil)
    }

    /// Sends `message` to this actor every `interval` (first after `initialDelay`, default one
    /// interval), under `key`, at a fixed rate. While one tick waits in the mailbox further
    /// ticks are skipped, so a busy actor never accumulates a backlog of them. A timer with the
    /// same key is replaced. An `interval` of zero or less makes the timer stop after its next
    /// tick (after `initialDelay`, default at once); intervals below 1 µs are raised to 1 µs.
    public func startPeriodicTimer(
        key: some Hashable & Sendable, message: Message, every interval: Duration,
        initialDelay: Duration? = nil
    ) {
        cell.assertInTurn("ActorContext.startPeriodicTimer")
        cell.startTimer(key: TimerKey(key), message: message, delay: initialDelay ?? interval, interval: interval)
    }

    /// Cancels the timer under `key`; a tick already in the mailbox is discarded. Unknown keys
    /// are ignored.
    public func cancelTimer(key: some Hashable & Sendable) {
        cell.assertInTurn("ActorContext.cancelTimer(key:)")
        cell.cancelTimer(key: TimerKey(key))
    }

    /// Whether a timer under `key` is active (a single timer stops being active once its
    /// message was handled).
    public func isTimerActive(key: some Hashable & Sendable) -> Bool {
        cell.extras?.timers[TimerKey(key)] != nil
    }

    /// Number of this actor's active timers.
    public var activeTimerCount: Int { cell.extras?.timers.count ?? 0 }

    /// Spawns a child: it stops when this actor stops.
    @discardableResult
    public func spawn<Child: SpawnableActor>(
        _ child: sending Child, options: SpawnOptions = .default
    ) -> ActorRef<Child.Definition.Message> {
        cell.assertInTurn("ActorContext.spawn")
        return cell.system.spawnRef(Child.runnable(child), factory: nil, options: options, parent: cell)
    }

    /// Spawns a restartable child from a factory: it stops when this actor stops.
    @discardableResult
    public func spawn<Child: SpawnableActor>(
        options: SpawnOptions = .default, factory: @escaping @Sendable () -> Child
    ) -> ActorRef<Child.Definition.Message> {
        cell.assertInTurn("ActorContext.spawn")
        let runnable = Child._runnableFactory(factory)
        return cell.system.spawnRef(runnable(), factory: runnable, options: options, parent: cell)
    }

    /// Runs `work` off the actor (as a Swift task on the system's ``ActorSystem/taskExecutor``,
    /// so that it and its continuations run on the workers) and sends `message(result)` back to
    /// it, so the result is handled like any other message, on the actor, in order.
    public func run<Value: Sendable>(
        _ work: @escaping @Sendable () async throws -> Value,
        then message: @escaping @Sendable (Result<Value, any Error>) -> Message
    ) {
        let me = ref
        Task(executorPreference: cell.system.taskExecutor) {
            let result: Result<Value, any Error>
            do { result = .success(try await work()) } catch { result = .failure(error) }
            me.tell(message(result))
        }
    }

    /// Asks another actor without blocking this one: the answer (or the ask's error) comes back
    /// as `message(result)`. No task is created; the reply itself enqueues the message.
    @inlinable
    public func ask<Target: Sendable, Value: Sendable>(
        _ target: ActorRef<Target>,
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Target,
        then message: @escaping @Sendable (Result<Value, AskError>) -> Message
    ) {
        let state = ActorAskState<Value, Message>(limit: cell.system.askLimit(timeout), replyTo: ref, map: message)
        target.sendAskHandingOff(request(Reply(state)), state: state)
    }
}

extension ActorContext where Message == AnyMessage {
    /// Watches `target`; the ``Terminated`` notice arrives as a message, for a handler
    /// registered for `Terminated`.
    public func watch<Target: Sendable>(_ target: ActorRef<Target>) {
        watch(target) { AnyMessage($0) }
    }
}
extension ActorContext {
    /// Asks an actor with per-type handlers without blocking this one: the handler's answer
    /// (of type `Value`) or the ask's error comes back as `message(result)`. No task is created.
    public func ask<Payload: Sendable, Value: Sendable>(
        _ target: ActorRef<AnyMessage>,
        _ payload: Payload,
        returning: Value.Type = Value.self,
        timeout: Duration? = nil,
        then message: @escaping @Sendable (Result<Value, AskError>) -> Message
    ) {
        let me = ref
        target.ask(payload, returning: Value.self, timeout: timeout) { result in me.tell(message(result)) }
    }
}
