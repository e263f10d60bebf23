internal import TroupeLocks
import Troupe

/// Supervises actors, pools and nested supervisors by id (ActorKit's supervision pool): it
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

    /// A top-level supervisor.
    public convenience init(system: ActorSystem, strategy: SupervisionStrategy = .default, name: String = "supervisor") {
        self.init(system: system, strategy: strategy, name: name, parent: nil)
    }

    init(system: ActorSystem, strategy: SupervisionStrategy, name: String, parent: ParentLink?) {
        self.system = system
        self.strategy = strategy
        self.name = name
        state = Locked(SupervisorState(name: name, parent: parent))
    }

    // MARK: Supervising

    /// Spawns an actor made by `creation` and supervises it under `id`. `creation` is called
    /// now, on the calling thread, and again (on the actor's worker thread) for every restart.
    ///
    /// `options` are the actor's spawn options; their name defaults to `id`, and their
    /// `failureDecider` must be `nil` (the supervisor installs its own; per-child decisions go
    /// in `policy`). Fails for an empty or taken id, or after the supervisor was stopped by
    /// its parent.
    @discardableResult
    public func supervise<Definition: ActorDefinition>(
        id: String,
        options: SpawnOptions = .default,
        policy: ChildPolicy = .inherited,
        creation: @escaping @Sendable () -> Definition
    ) throws(SupervisionError) -> ActorRef<Definition.Message> {
        try superviseActor(id: id, options: options, policy: policy) { [system] options in
            system.spawn(options: options, factory: creation)
        }
    }

    /// Spawns and supervises an actor with per-type handlers; otherwise exactly as the
    /// `ActorDefinition` overload.
    @discardableResult
    public func supervise<Actor: HandlerActor>(
        id: String,
        options: SpawnOptions = .default,
        policy: ChildPolicy = .inherited,
        creation: @escaping @Sendable () -> Actor
    ) throws(SupervisionError) -> ActorRef<AnyMessage> {
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
    public func supervisePool<Definition: ActorDefinition & SendableMetatype>(
        id: String,
        size: Int,
        routing: PoolRouting<Definition.Message> = .roundRobin,
        options: SpawnOptions = .default,
        policy: ChildPolicy = .inherited,
        creation: @escaping @Sendable (Int) -> Definition
    ) throws(SupervisionError) -> ActorPool<Definition.Message> {
        try superviseAnyPool(id: id, options: options, policy: policy) { [system] options throws(PoolError) in
            try system.spawnPool(size: size, routing: routing, name: options.name, options: options, member: creation)
        }
    }

    /// Spawns and supervises a pool of actors with per-type handlers; otherwise exactly as the
    /// `ActorDefinition` overload.
    @discardableResult
    public func supervisePool<Actor: HandlerActor>(
        id: String,
        size: Int,
        routing: PoolRouting<AnyMessage> = .roundRobin,
        options: SpawnOptions = .default,
        policy: ChildPolicy = .inherited,
        creation: @escaping @Sendable (Int) -> Actor
    ) throws(SupervisionError) -> ActorPool<AnyMessage> {
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
        let nested = Supervisor(system: system, strategy: strategy, name: "\(name)/\(id)",
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
    public func ref<Message: Sendable>(id: String, as type: Message.Type = Message.self) throws(SupervisionError) -> ActorRef<Message> {
        let target = try target(of: id)
        guard case .actor(let any) = target, let ref = any as? ActorRef<Message> else {
            throw .typeMismatch(id: id, expected: "ActorRef<\(Message.self)>", actual: target.typeName)
        }
        return ref
    }

    /// The pool supervised under `id`; fails like ``ref(id:as:)``.
    public func pool<Message: Sendable>(id: String, as type: Message.Type = Message.self) throws(SupervisionError) -> ActorPool<Message> {
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
            guard state.linkedChildren[parent]?.contains(child) == true else { throw .notLinked(child: child, parent: parent) }
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
            state.planRestart([(record, .requested)], order: RestartOrder(reason: reason, originDelay: .zero, failingMessage: .deadLetter),
                              delayed: nil, into: &plan)
        }
        _ = execute(plan, origin: nil)
    }

    /// Handles `error` as a failure of the child `id` as a whole (ActorKit's `crashWithError:`,
    /// from outside the actor; inside a handler, throw or call `context.crash(_:)` instead):
    /// its decider, the intensity, the scope, links and escalation apply as for a real
    /// failure (backoff included), except that no message is involved: the restarts happen
    /// before each actor's next message. For a pool, a restart restarts every member. Returns the directive this supervisor applied (after the intensity check).
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
    public func observe(_ observer: @escaping @Sendable (SupervisionEvent) -> Void) -> SupervisionObservation {
        let id = state.withLock { state in
            state.nextObserverID += 1
            state.observers.append((state.nextObserverID, observer))
            return state.nextObserverID
        }
        return SupervisionObservation { [weak self] in
            self?.state.withLock { $0.observers.removeAll { $0.id == id } }
        }
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

// MARK: Implementation

extension Supervisor {
    /// Checks the id and options and reserves the id, so that the child is known before its
    /// actors exist (they may fail before `supervise` returns).
    private func reserve(id: String, kind: ChildRecord.Kind, policy: ChildPolicy, options: SpawnOptions) throws(SupervisionError) -> ChildRecord {
        guard !id.isEmpty else { throw .emptyID(supervisor: name) }
        guard options.failureDecider == nil else { throw .failureDeciderNotAllowed(id: id) }
        guard !options.selfInvalidating else { throw .selfInvalidatingNotSupported(id: id) }
        let record = ChildRecord(id: id, kind: kind, policy: policy.resolved(with: strategy))
        try state.withLock { (state: inout SupervisorState) throws(SupervisionError) in
            guard !state.isClosed else { throw .supervisorStopped(name) }
            guard state.entries[id] == nil else { throw .duplicateID(id, supervisor: name) }
            state.entries[id] = ChildEntry(record: record)
            state.order.append(id)
        }
        return record
    }

    /// The spawn options of `record`'s actors: named after the id, failures decided here.
    private func childOptions(_ options: SpawnOptions, for record: ChildRecord) -> SpawnOptions {
        var options = options
        if options.name == nil { options.name = record.id }
        options.failureDecider = { [self] failure in actorFailed(record, failure) }
        return options
    }

    private func superviseActor<Message: Sendable>(
        id: String, options: SpawnOptions, policy: ChildPolicy,
        spawn: (SpawnOptions) -> ActorRef<Message>
    ) throws(SupervisionError) -> ActorRef<Message> {
        let record = try reserve(id: id, kind: .actor, policy: policy, options: options)
        let ref = spawn(childOptions(options, for: record))
        attach(record, target: .actor(ref), watching: [ref], whenAllStopped: nil)
        return ref
    }

    private func superviseAnyPool<Message: Sendable>(
        id: String, options: SpawnOptions, policy: ChildPolicy,
        spawn: (SpawnOptions) throws(PoolError) -> ActorPool<Message>
    ) throws(SupervisionError) -> ActorPool<Message> {
        let record = try reserve(id: id, kind: .pool, policy: policy, options: options)
        let pool: ActorPool<Message>
        do {
            pool = try spawn(childOptions(options, for: record))
        } catch {
            state.withLock { state in if state.isCurrent(record) { state.remove(id) } }
            throw .invalidPool(id: id, error)
        }
        attach(record, target: .pool(SupervisedPool(pool)), watching: pool.members, whenAllStopped: { pool.isStopped })
        return pool
    }

    /// Completes a reservation; watches the actors so that one stopping by itself leaves the
    /// supervisor (a pool leaves when all its members have stopped).
    private func attach(_ record: ChildRecord, target: ChildTarget, watching refs: [any SupervisedRef],
                        whenAllStopped: (@Sendable () -> Bool)?) {
        let attached = state.withLock { state in
            guard state.isCurrent(record) else { return false }
            state.entries[record.id]?.target = target
            return true
        }
        guard attached else {
            // Stopped by supervision or unsupervised while it was being created.
            stopDetached(target)
            return
        }
        for ref in refs {
            // Registered outside the lock: for an actor already stopped it runs right here.
            ref.whenTerminated { [self] terminated in
                if let whenAllStopped, !whenAllStopped() { return }
                childTerminated(record, reason: terminated.reason)
            }
        }
    }

    private func stopDetached(_ target: ChildTarget) {
        switch target {
        case .actor(let ref): ref.stop()
        case .pool(let pool): for member in pool.members() { member.stop() }
        case .supervisor(let nested): _ = nested.stopEverything(closing: true, origin: nil)
        }
    }

    /// A supervised actor (or a whole pool) stopped: if supervision did not stop it, forget it.
    /// On the thread that stopped it.
    private func childTerminated(_ record: ChildRecord, reason: TerminationReason) {
        var plan = SupervisionPlan()
        let removed = state.withLock { state in
            guard state.isCurrent(record) else { return false }
            plan = state.makePlan()
            state.remove(record.id)
            state.event(record.id, .terminated(reason), error: nil, into: &plan)
            return true
        }
        if removed { deliver(plan) }
    }

    /// The failure decider of every supervised actor and pool member: runs on the failing
    /// actor's worker thread, before it handles anything else.
    private func actorFailed(_ record: ChildRecord, _ failure: ActorFailure) -> FailureDirective {
        handleFailure(of: record, error: failure.error, origin: FailureOrigin(record: record, actor: failure.actor)).directive ?? .stop
    }

    struct FailureResolution {
        /// For the failing actor; `nil` when none is involved or it is no longer supervised.
        var directive: FailureDirective?
        /// What this supervisor decided; `nil` when the child was no longer supervised.
        var applied: SupervisionDirective?
    }

    /// Decides a failure of `record` (by its decider, outside the lock), plans it under the
    /// lock, then carries it out, or escalates it to the parent.
    func handleFailure(of record: ChildRecord, error: any Error, origin: FailureOrigin?) -> FailureResolution {
        let decision = record.policy.decider(error)
        let now = ContinuousClock.now
        var plan = SupervisionPlan()
        let outcome = state.withLock { state in
            plan = state.makePlan()
            return state.planFailure(of: record, error: error, decision: decision, origin: origin, scope: strategy.scope,
                                     now: now, into: &plan)
        }
        switch outcome {
        case .detached:
            return FailureResolution(directive: nil, applied: nil)
        case .escalate(let parent, let group):
            deliver(plan)
            return FailureResolution(directive: parent.handleFailure(of: group, error: error, origin: origin).directive,
                                     applied: .escalate)
        case .handled(let applied):
            return FailureResolution(directive: execute(plan, origin: origin), applied: applied)
        }
    }

    /// The parent restarts this nested supervisor as a whole: every child restarts.
    private func restartAll(_ order: RestartOrder, origin: FailureOrigin?) -> FailureDirective? {
        var plan = SupervisionPlan()
        state.withLock { state in
            plan = state.makePlan()
            let targets = state.order.compactMap { state.entries[$0]?.record }.map { ($0, RestartCause.enclosingSupervisor) }
            state.planRestart(targets, order: order, delayed: origin?.record, failingActor: origin?.actor, into: &plan)
        }
        return execute(plan, origin: origin)
    }

    /// Stops every child; `closing`: for good (the parent stopped or removed this supervisor).
    private func stopEverything(closing: Bool, origin: FailureOrigin?) -> FailureDirective? {
        var plan = SupervisionPlan()
        state.withLock { state in
            if closing {
                state.isClosed = true
                state.parent = nil
            }
            plan = state.makePlan()
            let targets = state.order.compactMap { state.entries[$0]?.record }.map { ($0, StopCause.supervisorStopped) }
            state.planStop(targets, error: nil, into: &plan)
        }
        return execute(plan, origin: origin)
    }

    /// Carries out a plan with no lock held: orders the restarts and stops (the failing
    /// actor's own is returned as its directive instead), then delivers the events. Returns
    /// the failing actor's directive when the plan involves it.
    private func execute(_ plan: SupervisionPlan, origin: FailureOrigin?) -> FailureDirective? {
        var directive = plan.originDirective
        for operation in plan.operations {
            switch operation {
            case .restart(let record, let target, let order):
                let isOrigin = origin?.record === record
                if isOrigin { directive = .restart(after: order.originDelay, failingMessage: order.failingMessage) }
                switch target {
                case .actor(let ref)?:
                    if !isOrigin { _ = ref.requestRestart(reason: order.reason, after: order.originDelay) }
                case .pool(let pool)?:
                    for member in pool.members() where !(isOrigin && member.address.id == origin?.actor.id) {
                        _ = member.requestRestart(reason: order.reason, after: order.originDelay)
                    }
                case .supervisor(let nested)?:
                    if let nestedDirective = nested.restartAll(order, origin: origin) { directive = nestedDirective }
                case nil:
                    break  // still being created: its first instance is fresh anyway
                }
            case .stop(let record, let target):
                let isOrigin = origin?.record === record
                if isOrigin { directive = .stop }
                switch target {
                case .actor(let ref)?:
                    if !isOrigin { ref.stop() }
                case .pool(let pool)?:
                    for member in pool.members() where !(isOrigin && member.address.id == origin?.actor.id) { member.stop() }
                case .supervisor(let nested)?:
                    if let nestedDirective = nested.stopEverything(closing: true, origin: origin) { directive = nestedDirective }
                case nil:
                    break  // `attach` finds the entry gone and stops it
                }
            }
        }
        deliver(plan)
        return directive
    }

    private func deliver(_ plan: SupervisionPlan) {
        for event in plan.events {
            for observer in plan.observers { observer(event) }
        }
    }
}

/// A supervised actor whose message type is checked where it is used (``Supervisor/subscript(id:)``).
public struct SupervisedActor: Sendable, CustomStringConvertible {
    /// The child's id in its supervisor.
    public let id: String
    let ref: any SupervisedRef

    /// The actor's address (it stays the same across restarts).
    public var address: ActorAddress { ref.address }

    /// Whether the actor has stopped.
    public var isStopped: Bool { ref.isStopped }

    /// Sends `message`. Fails with ``SupervisionError/typeMismatch(id:expected:actual:)``,
    /// naming the actor's message type, when the actor does not accept `message`'s type (an
    /// actor with per-type handlers accepts any value; its handlers decide).
    @discardableResult
    public func tell<Message: Sendable>(_ message: Message) throws(SupervisionError) -> TellOutcome {
        guard let outcome = ref.tellIfAccepted(message) else {
            throw .typeMismatch(id: id, expected: "an actor accepting \(Message.self)", actual: "ActorRef<\(ref.messageTypeName)>")
        }
        return outcome
    }

    /// The typed ref; fails with ``SupervisionError/typeMismatch(id:expected:actual:)`` when the
    /// actor accepts another message type.
    public func ref<Message: Sendable>(as type: Message.Type = Message.self) throws(SupervisionError) -> ActorRef<Message> {
        guard let typed = ref as? ActorRef<Message> else {
            throw .typeMismatch(id: id, expected: "ActorRef<\(Message.self)>", actual: "ActorRef<\(ref.messageTypeName)>")
        }
        return typed
    }

    public var description: String { "SupervisedActor(\(id): ActorRef<\(ref.messageTypeName)> \(address))" }
}
