internal import TroupeLocks
import Troupe

/// Supervises actors, pools and nested supervisors by id: it
/// creates them from creation closures, re-creates them when they fail, and re-creates the
/// actors linked to them.
///
/// ```swift
/// let supervisor = Supervisor(system: system, strategy: .oneForOne(backoff: .exponential()))
/// let db = try supervisor.supervise(id: "db") { Database(url: url) }
/// try supervisor.supervise(id: "cache") { Cache() }
/// try supervisor.link("cache", toParent: "db")       // a restart of "db" re-creates "cache"
///
/// let cache: ActorRef<Cache.Message>? = supervisor["cache"]
/// try supervisor.ref(id: "db", as: Database.Message.self).tell(.connect)
/// try supervisor.unsupervise(id: "db")                // stops "db" and "cache"
/// ```
///
/// - **Restart keeps the mailbox.** A supervised actor is spawned from its creation closure,
///   which the runtime calls again for every restart. The `ActorRef` stays valid, and every
///   message sent to it, before or during the failure, is handled by the fresh instance (the
///   failing message itself is dead-lettered, or retried once: see
///   ``SupervisionStrategy/failingMessage``). The lifecycle hooks run on the actor:
///   `willRestart(reason:context:)` on the old instance, `didRestart(reason:context:)` on the
///   fresh one (by default it calls `started`), `stopped(context:)` when supervision stops it.
/// - **Decisions.** The child's decider (``ChildPolicy/decider`` or the strategy's) maps the
///   error to a ``SupervisionDirective``; the ``RestartIntensity`` may turn a restart into a
///   stop or an escalation; the ``RestartScope`` extends a restart or a stop to siblings; links
///   extend it to linked children, recursively.
/// - **Pools** (`supervisePool(id:size:routing:options:policy:creation:)`): one member's
///   failure restarts only that member. A restart of the pool as a whole (a linked parent
///   restarted, an `allForOne` sibling failed, ``restart(id:reason:)``) restarts every member,
///   each keeping its mailbox.
/// - **Nesting** (``superviseSupervisor(id:strategy:policy:)``): a nested supervisor's
///   ``SupervisionDirective/escalate`` becomes a failure of its id in the parent, whose
///   strategy decides for the whole group.
///
/// Thread-safety: `Sendable`; every method may be called from any thread, actors included.
/// The state sits behind one mutex, held only for bookkeeping: creation closures, deciders and
/// observers run without it, and actors are restarted or stopped (which only enqueues a system
/// message) after it is released. Failures are decided on the failing actor's worker thread,
/// synchronously, before that actor handles anything else.
///
/// Lifetime: the supervised actors reference their supervisor, so it lives as long as it
/// supervises a running actor; a nested supervisor references its parent weakly.
public final class Supervisor: Sendable {
    /// The system the children run in.
    public let system: ActorSystem
    /// For events, errors and logs; nested supervisors are named `parent/id`.
    public let name: String
    public let strategy: SupervisionStrategy
    let state: Locked<SupervisorState>
    /// Where the supervisor's clock starts: restart-intensity windows and backoff resets are
    /// measured on the system's clock (`ActorSystem.uptime`), which is virtual time on a
    /// deterministic test system, expressed as `ContinuousClock` instants from this anchor.
    private let clockAnchor: (instant: ContinuousClock.Instant, uptime: Duration)
    /// Who observes this supervisor's events.
    let observers = ObserverList<@Sendable (SupervisionEvent) -> Void>()

    /// A top-level supervisor.
    public convenience init(system: ActorSystem, strategy: SupervisionStrategy = .default, name: String = "supervisor")
    {
        self.init(system: system, strategy: strategy, name: name, parent: nil)
        provideSnapshotSection()
    }

    init(system: ActorSystem, strategy: SupervisionStrategy, name: String, parent: ParentLink?) {
        self.system = system
        self.strategy = strategy
        self.name = name
        clockAnchor = (ContinuousClock.now, system.uptime)
        state = Locked(SupervisorState(name: name, parent: parent, observers: observers))
    }

    /// Now, on the system's clock.
    var now: ContinuousClock.Instant { clockAnchor.instant + (system.uptime - clockAnchor.uptime) }

    // MARK: Supervising

    /// Spawns an actor made by `creation` and supervises it under `id`. `creation` is called
    /// now, on the calling thread, and again (on the actor's worker thread) for every restart.
    ///
    /// `options` are the actor's spawn options; their name defaults to `id`, and their
    /// `failureDecider` must be `nil` (the supervisor installs its own; per-child decisions go
    /// in `policy`). Fails for an empty or taken id, or after the supervisor was stopped by
    /// its parent.
    @discardableResult
    public func supervise<Actor: SpawnableActor>(
        id: String,
        options: SpawnOptions = .default,
        policy: ChildPolicy = .inherited,
        creation: @escaping @Sendable () -> Actor
    ) throws(SupervisionError) -> ActorRef<Actor.Definition.Message> {
        try superviseActor(id: id, options: options, policy: policy) { [system] options in
            system.spawn(options: options, factory: creation)
        }
    }

    /// Spawns a pool of `size` members made by `creation(index)` and supervises it under `id`
    /// (members are named `id-index` unless `options` has a name). One member's failure is
    /// decided by the child's policy and, on restart, restarts only that member; the pool as a
    /// whole restarts (every member, each keeping its mailbox) when a linked parent restarts,
    /// an `allForOne` sibling fails, or on ``restart(id:reason:)``. Stopping it stops every
    /// member.
    @discardableResult
    public func supervisePool<Actor: SpawnableActor>(
        id: String,
        size: Int,
        routing: PoolRouting<Actor.Definition.Message> = .roundRobin,
        options: SpawnOptions = .default,
        policy: ChildPolicy = .inherited,
        creation: @escaping @Sendable (Int) -> Actor
    ) throws(SupervisionError) -> ActorPool<Actor.Definition.Message> {
        try superviseAnyPool(id: id, options: options, policy: policy) { [system] options throws(PoolError) in
            try system.spawnPool(size: size, routing: routing, name: options.name, options: options, member: creation)
        }
    }

    /// Creates a supervisor nested under `id`, with its own strategy. Its escalations (a
    /// decider answering ``SupervisionDirective/escalate``, or an exceeded intensity with
    /// ``RestartIntensity/Exceeded/escalate``) are failures of `id` here, decided by `policy`
    /// (or this supervisor's strategy): restart restarts every child of the nested supervisor,
    /// stop stops them all and closes it. Its name is `name/id`.
    public func superviseSupervisor(
        id: String,
        strategy: SupervisionStrategy = .default,
        policy: ChildPolicy = .inherited
    ) throws(SupervisionError) -> Supervisor {
        let record = try reserve(id: id, kind: .supervisor, policy: policy, options: .default)
        let nested = Supervisor(
            system: system, strategy: strategy, name: "\(name)/\(id)",
            parent: ParentLink(supervisor: self, record: record))
        attach(record, target: .supervisor(nested), watching: [], whenAllStopped: nil)
        return nested
    }

    /// Stops the child `id` (an actor, every member of a pool, every child of a nested
    /// supervisor, which is then closed) and, recursively, the children linked to it, and stops
    /// supervising them all. They stop after the messages already in their mailboxes
    /// (`stopped` runs on each). Fails for an unknown id.
    public func unsupervise(id: String) throws(SupervisionError) {
        var plan = SupervisionPlan()
        try state.withLock { (state: inout SupervisorState) throws(SupervisionError) in
            guard let record = state.record(id) else { throw .unknownID(id, supervisor: name) }
            plan = state.makePlan()
            state.planStop([(record, .unsupervised)], error: nil, into: &plan)
        }
        _ = execute(plan, origin: nil)
    }

    /// Stops and unsupervises every child. The supervisor stays usable.
    public func stopAll() {
        _ = stopEverything(closing: false, origin: nil)
    }

    // MARK: Access

    /// The actor supervised under `id`, or `nil` when no actor has that id. Its message type
    /// is checked when you use it: a message of a type it does not accept is an error that
    /// names both types, not a silent `nil`.
    ///
    /// ```swift
    /// try supervisor["master"]?.tell(Master.Message.start)
    /// try supervisor["session"]?.tell(Logout())             // a per-type handler actor
    /// let worker = try supervisor["worker"]?.ref(as: Worker.Message.self)
    /// ```
    public subscript(id: String) -> SupervisedActor? {
        guard case .actor(let ref)? = state.withLock({ $0.entries[id]?.target }) else { return nil }
        return SupervisedActor(id: id, ref: ref)
    }

    /// The typed subscript that code written before 0.1 used: the actor supervised under `id` if it
    /// accepts the message type the context asks for, else `nil`. Kept, deprecated, so that code
    /// written against it compiles; it is removed in 0.3.
    ///
    /// ```swift
    /// let worker: ActorRef<Worker.Message>? = supervisor["worker"]   // before
    /// let worker = supervisor["worker", as: Worker.Message.self]     // now
    /// ```
    @available(
        *, deprecated,
        message: "write supervisor[id, as: Message.self] (nil on a wrong type) or supervisor.ref(id:as:) (throws)"
    )
    public subscript<Message: Sendable>(id: String) -> ActorRef<Message>? {
        self[id, as: Message.self]
    }

    /// The actor supervised under `id` if it accepts `Message`, else `nil`
    /// (``ref(id:as:)`` throws instead, saying which type it is):
    /// `supervisor["worker", as: Worker.Message.self]?.tell(.work(1))`.
    public subscript<Message: Sendable>(id: String, as type: Message.Type) -> ActorRef<Message>? {
        guard case .actor(let ref)? = state.withLock({ $0.entries[id]?.target }) else { return nil }
        return ref as? ActorRef<Message>
    }

    /// The actor supervised under `id`; fails with ``SupervisionError/unknownID(_:supervisor:)``
    /// or, when it is a pool, a supervisor or an actor of another message type,
    /// ``SupervisionError/typeMismatch(id:expected:actual:)``.
    public func ref<Message: Sendable>(
        id: String, as type: Message.Type = Message.self
    ) throws(SupervisionError) -> ActorRef<Message> {
        let target = try target(of: id)
        guard case .actor(let any) = target, let ref = any as? ActorRef<Message> else {
            throw .typeMismatch(id: id, expected: "ActorRef<\(Message.self)>", actual: target.typeName)
        }
        return ref
    }

    /// The pool supervised under `id`; fails like ``ref(id:as:)``.
    public func pool<Message: Sendable>(
        id: String, as type: Message.Type = Message.self
    ) throws(SupervisionError) -> ActorPool<Message> {
        let target = try target(of: id)
        guard case .pool(let supervised) = target, let pool = supervised.pool as? ActorPool<Message> else {
            throw .typeMismatch(id: id, expected: "ActorPool<\(Message.self)>", actual: target.typeName)
        }
        return pool
    }

    /// The nested supervisor under `id`; fails like ``ref(id:as:)``.
    public func supervisor(id: String) throws(SupervisionError) -> Supervisor {
        let target = try target(of: id)
        guard case .supervisor(let nested) = target else {
            throw .typeMismatch(id: id, expected: "Supervisor", actual: target.typeName)
        }
        return nested
    }

    private func target(of id: String) throws(SupervisionError) -> ChildTarget {
        guard let target = state.withLock({ $0.entries[id]?.target }) else { throw .unknownID(id, supervisor: name) }
        return target
    }

    /// The children's ids, in supervision order (the order ``RestartScope/restForOne`` uses).
    public var ids: [String] { state.withLock { $0.order } }

    /// Whether a child has this id.
    public func contains(id: String) -> Bool { state.withLock { $0.entries[id] != nil } }

    /// How many times the child was restarted, for any cause (a pool: each member restart
    /// counts, and a whole-pool restart counts once); `nil` for an unknown id.
    public func restartCount(of id: String) -> Int? { state.withLock { $0.entries[id]?.restarts } }

    /// How many failures of the child were decided (a pool: its members' failures; a nested
    /// supervisor: its escalations); `nil` for an unknown id.
    public func failureCount(of id: String) -> Int? { state.withLock { $0.entries[id]?.failures } }

    /// Whether the parent stopped (or removed) this nested supervisor: it then has no children
    /// and refuses new ones.
    public var isStopped: Bool { state.withLock { $0.isClosed } }

    /// The parent of a nested supervisor (while it is attached and alive).
    public var parent: Supervisor? { state.withLock { $0.parent?.supervisor } }

    // MARK: Links

    /// Links `child` to `parent`: every restart of `parent` (for any cause) restarts `child`,
    /// and stopping or unsupervising `parent` by supervision stops and unsupervises `child`,
    /// recursively. A child may have several parents. Linking twice is harmless. Fails for
    /// unknown ids and for links that would make a cycle.
    public func link(_ child: String, toParent parent: String) throws(SupervisionError) {
        try state.withLock { (state: inout SupervisorState) throws(SupervisionError) in
            guard state.entries[child] != nil else { throw .unknownID(child, supervisor: name) }
            guard state.entries[parent] != nil else { throw .unknownID(parent, supervisor: name) }
            if state.linkedChildren[parent]?.contains(child) == true { return }
            if state.isLinkedAncestor(child, of: parent) { throw .linkCycle(child: child, parent: parent) }
            state.linkedChildren[parent, default: []].append(child)
            state.linkedParents[child, default: []].append(parent)
        }
    }

    /// Removes the link made by ``link(_:toParent:)``. Fails for unknown ids or when the two
    /// are not linked.
    public func unlink(_ child: String, fromParent parent: String) throws(SupervisionError) {
        try state.withLock { (state: inout SupervisorState) throws(SupervisionError) in
            guard state.entries[child] != nil else { throw .unknownID(child, supervisor: name) }
            guard state.entries[parent] != nil else { throw .unknownID(parent, supervisor: name) }
            guard state.linkedChildren[parent]?.contains(child) == true else {
                throw .notLinked(child: child, parent: parent)
            }
            state.linkedChildren[parent]?.removeAll { $0 == child }
            if state.linkedChildren[parent]?.isEmpty == true { state.linkedChildren[parent] = nil }
            state.linkedParents[child]?.removeAll { $0 == parent }
            if state.linkedParents[child]?.isEmpty == true { state.linkedParents[child] = nil }
        }
    }

    /// The ids linked to `parent` (directly), in link order.
    public func linkedChildren(of parent: String) throws(SupervisionError) -> [String] {
        try state.withLock { (state: inout SupervisorState) throws(SupervisionError) in
            guard state.entries[parent] != nil else { throw .unknownID(parent, supervisor: name) }
            return state.linkedChildren[parent] ?? []
        }
    }

    // MARK: Explicit restarts and failures

    /// Restarts the child `id` as a whole (an actor; every member of a pool; every child of a
    /// nested supervisor) and, recursively, the children linked to it, each before its next
    /// message and keeping its mailbox. Does not count against the restart intensity and
    /// ignores the scope. Fails for an unknown id.
    public func restart(id: String, reason: any Error = RestartRequested()) throws(SupervisionError) {
        var plan = SupervisionPlan()
        try state.withLock { (state: inout SupervisorState) throws(SupervisionError) in
            guard let record = state.record(id) else { throw .unknownID(id, supervisor: name) }
            plan = state.makePlan()
            state.planRestart(
                [(record, .requested)],
                order: RestartOrder(reason: reason, originDelay: .zero, failingMessage: .deadLetter),
                delayed: nil, into: &plan)
        }
        _ = execute(plan, origin: nil)
    }

    /// Handles `error` as a failure of the child `id` as a whole, from outside the actor (inside
    /// a handler, throw or call `context.crash(_:)` instead): its decider, the intensity, the
    /// scope, links and escalation apply as for a real failure (backoff included), except that
    /// no message is involved: the restarts happen before each actor's next message. For a
    /// pool, a restart restarts every member. Returns the directive this supervisor applied
    /// (after the intensity check).
    /// Fails for an unknown id.
    @discardableResult
    public func reportFailure(id: String, error: any Error) throws(SupervisionError) -> SupervisionDirective {
        guard let record = state.withLock({ $0.record(id) }) else { throw .unknownID(id, supervisor: name) }
        return handleFailure(of: record, error: error, origin: nil).applied ?? .stop
    }

    // MARK: Events

    /// Calls `observer` with every later ``SupervisionEvent`` of this supervisor (not of its
    /// nested supervisors: observe those too), on the thread where it happens, usually a
    /// failing actor's worker thread: keep it quick and never block in it. It may call the
    /// supervisor.
    @discardableResult
    public func observe(_ observer: @escaping @Sendable (SupervisionEvent) -> Void) -> Observation {
        observers.add(observer)
    }

    /// The later events as an async sequence. It ends its observation when the consuming task
    /// is cancelled or the stream is dropped.
    public func events(
        bufferingPolicy: AsyncStream<SupervisionEvent>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<SupervisionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SupervisionEvent.self, bufferingPolicy: bufferingPolicy)
        let observation = observe { continuation.yield($0) }
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }
}

extension Supervisor: CustomStringConvertible {
    public var description: String {
        let (count, closed) = state.withLock { ($0.order.count, $0.isClosed) }
        return "Supervisor(\(name), \(count) children, \(strategy.scope)\(closed ? ", stopped" : ""))"
    }
}
