#if canImport(Glibc)
    import Glibc
#endif
import Synchronization
internal import CTroupe

/// What an ``ActorRef`` holds, without its message type: the cell and, for a self-invalidating
/// actor, the lease that keeps it from invalidating itself while the ref lives.
struct UntypedActorRef {
    let cell: AnyCell
    let lease: InvalidationLease?
}

/// A reference to an actor that accepts `Message`. Cheap to copy, `Sendable`, hashable by
/// actor identity. The only way to reach an actor.
public struct ActorRef<Message: Sendable>: Sendable, Hashable, CustomStringConvertible {
    @usableFromInline let cell: MailboxCell<Message>
    /// For ``SpawnOptions/selfInvalidating`` actors: the lease all refs share; `nil` otherwise.
    private let lease: InvalidationLease?

    @usableFromInline
    init(cell: MailboxCell<Message>) {
        self.cell = cell
        lease = cell.config?.selfInvalidation?.lease(for: cell)
    }

    /// Sends `message` without waiting. Any thread, wait-free in steady state (no lock, no
    /// allocation: envelopes are recycled). Messages from one sender arrive in send order.
    /// A message that cannot be enqueued becomes a dead letter; the outcome says which.
    @discardableResult
    @inlinable @inline(__always)
    public func tell(_ message: consuming Message) -> TellOutcome {
        cell.tell(message)
    }

    /// Sends a request built around a ``Reply`` and waits for the answer.
    ///
    /// ```swift
    /// let total = try await counter.ask { .get($0) }
    /// ```
    /// Fails with ``AskError``: `.timedOut` after `timeout` (default: the system's
    /// ``ActorSystem/Configuration/askTimeout``), `.recipientStopped`, `.noReply` as soon as the
    /// handler drops the reply unanswered, `.undeliverable` when the request is dead-lettered,
    /// `.failed` when the handler answers with an error. Never hangs without one of these.
    @inlinable
    nonisolated(nonsending)
        public func ask<Value: Sendable>(
            timeout: Duration? = nil,
            _ request: (Reply<Value>) -> Message
        ) async throws(AskError) -> Value
    {
        try await Asking.await(cell.system, timeout: timeout, handingOffTo: cell) { state in
            _ = cell.send(request(Reply(state)), askToken: .retaining(state))
        }
    }

    /// Sends a request and calls `onReply` exactly once with the answer or the error, on the
    /// thread that completes the ask (the replier's, or the timer's). Keep `onReply` short.
    @inlinable
    public func ask<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message,
        onReply: @escaping @Sendable (Result<Value, AskError>) -> Void
    ) {
        Asking.callback(cell.system, timeout: timeout, onReply: onReply) { state in
            sendAsk(request(Reply(state)), state: state)
        }
    }

    /// Blocks the calling thread until the answer arrives: for callers outside the runtime,
    /// such as a command-line program's main thread, and for actors spawned with
    /// ``ActorExecutor/dedicatedThread`` (blocking is what their thread is for). On a shared
    /// worker thread, or from a dedicated actor asking itself, it fails at once with
    /// ``AskError/blockingOnWorkerThread`` instead of deadlocking.
    public func askBlocking<Value: Sendable>(
        timeout: Duration? = nil,
        _ request: (Reply<Value>) -> Message
    ) throws(AskError) -> Value {
        try Asking.blocking(cell.system, timeout: timeout, targets: { $0 === cell }) { state in
            sendAsk(request(Reply(state)), state: state)
        }
    }

    /// Sends an ask's request: arms its timeout and lets the envelope carry the ask state.
    /// Any thread. Shared by refs and pools.
    @inlinable
    func sendAsk<Value>(_ message: consuming Message, state: AskState<Value>) {
        cell.system.timer.armTimeout(of: state)
        // The envelope owns one retain of the state until it is handled or dead-lettered: the
        // request may not hold its Reply, and the ask may end (timeout) before the envelope does.
        _ = cell.send(message, askToken: .retaining(state))
    }

    /// Sends an ask's request from an actor's turn (``ActorContext/ask(_:timeout:_:then:)``):
    /// when the actor is idle, its turn runs here first (``HandOff``), and the timer is armed
    /// only for an ask still open after it.
    @inlinable
    func sendAskHandingOff<Value>(_ message: consuming Message, state: AskState<Value>) {
        guard let worker = HandOff.prepare(cell) else {
            sendAsk(message, state: state)
            return
        }
        _ = cell.send(message, askToken: .retaining(state))
        HandOff.finish(worker)
        if !state.completed.load(ordering: .acquiring) { cell.system.timer.armTimeout(of: state) }
    }

    /// Asks the actor to stop after the messages already sent to it. Later messages become
    /// dead letters. Stopping twice is harmless.
    public func stop() { cell.requestStop() }

    /// Calls `callback` exactly once with the ``Terminated`` notice when the actor stops, on
    /// the thread that stops it (or at once, on the caller's thread, when it already has).
    /// Keep it short. Actors watch with ``ActorContext/watch(_:notice:)`` instead.
    public func whenTerminated(_ callback: @escaping @Sendable (Terminated) -> Void) {
        cell.system.addWatcher(.callback(callback), to: cell)
    }

    /// Waits until the actor has stopped and returns why.
    public func terminated() async -> Terminated {
        await withUnsafeContinuation { continuation in
            whenTerminated { continuation.resume(returning: $0) }
        }
    }

    /// Restarts the actor before its next message: its instance is replaced by a fresh one
    /// from its spawn factory (`willRestart` on the old, `didRestart` on the new instance) and
    /// the pending mailbox is kept, including messages already queued. With a `delay`, the
    /// actor is first suspended for that long (handling nothing, keeping its mailbox), as with
    /// ``FailureDirective/restart(after:failingMessage:)``. Supervisors use it to restart
    /// siblings and linked actors. Any thread. Requests that reach the actor before it acts
    /// make one restart (the last reason and delay win). Returns false when the actor cannot
    /// restart: it has stopped, or it was spawned from an instance rather than a factory.
    @discardableResult
    public func requestRestart(reason: any Error = RestartRequested(), after delay: Duration = .zero) -> Bool {
        cell.requestRestart(reason: reason, after: delay)
    }

    /// The ref without its message type, for storage whose layout must not depend on it.
    var untyped: UntypedActorRef { UntypedActorRef(cell: cell, lease: lease) }

    /// The actor's identity.
    public var address: ActorAddress { cell.address }

    /// Whether the actor has stopped.
    public var isStopped: Bool { cell.isStopped }

    /// Whether the actor can be restarted (it was spawned from a factory).
    public var isRestartable: Bool { cell.config?.factory != nil }

    /// Messages waiting in the mailbox (approximate while senders are active), or `nil` when
    /// the actor was spawned without ``SpawnOptions/tracksMailboxDepth`` and an unbounded mailbox.
    public var mailboxDepth: Int? {
        let depth = CTroupe_mailbox_depth(cell.mailbox)
        return depth < 0 ? nil : Int(depth)
    }

    /// Whether the mailbox holds no message (always known, unlike the depth).
    public var isMailboxEmpty: Bool { CTroupe_mailbox_is_empty(cell.mailbox) }

    /// The system the actor belongs to.
    public var system: ActorSystem { cell.system }

    public var description: String { "ActorRef<\(Message.self)>(\(cell.address))" }

    public static func == (lhs: ActorRef, rhs: ActorRef) -> Bool { lhs.cell === rhs.cell }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(cell)) }
}
