import Troupe

/// Where a ``MultiDispatcher`` runs the calls it forwards.
public struct DispatchTarget: Sendable {
    enum Kind: Sendable {
        case synchronous
        case enqueue(@Sendable (DispatchJob) -> TellOutcome)
    }

    let kind: Kind

    /// On the calling thread, before `dispatch` returns.
    public static var synchronous: DispatchTarget { DispatchTarget(kind: .synchronous) }

    /// On an actor of yours: each call is wrapped by `wrap` into one of its messages, whose
    /// handler must call ``DispatchJob/run()``. Calls then run one at a time, in dispatch
    /// order per dispatching thread, interleaved with the actor's other messages.
    public static func actor<Message: Sendable>(
        _ ref: ActorRef<Message>,
        wrap: @escaping @Sendable (DispatchJob) -> Message
    ) -> DispatchTarget {
        DispatchTarget(kind: .enqueue { job in ref.tell(wrap(job)) })
    }

    /// On an actor spawned for the purpose in `system`; with `executor: .dedicatedThread` it
    /// gets its own OS thread (a dispatch worker of its own).
    public static func serialActor(
        in system: ActorSystem,
        name: String = "multi-dispatch",
        executor: ActorExecutor = .shared
    ) -> DispatchTarget {
        let ref = system.spawn(DispatchRunner(), options: SpawnOptions(name: name, executor: executor))
        return actor(ref) { $0 }
    }
}

/// Runs the dispatch jobs it receives, one at a time.
struct DispatchRunner: ActorDefinition {
    typealias Message = DispatchJob
    func receive(_ message: DispatchJob, context: ActorContext<DispatchJob>) { message.run() }
}
