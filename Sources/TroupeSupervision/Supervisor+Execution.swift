internal import TroupeLocks
import Troupe

/// How a supervisor carries out its work: reserving ids, attaching children, deciding on
/// failures and executing the plans its strategy makes (the public API is in `Supervisor.swift`).
extension Supervisor {
    /// Checks the id and options and reserves the id, so that the child is known before its
    /// actors exist (they may fail before `supervise` returns).
    func reserve(
        id: String, kind: ChildRecord.Kind, policy: ChildPolicy, options: SpawnOptions
    ) throws(SupervisionError) -> ChildRecord {
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
    func childOptions(_ options: SpawnOptions, for record: ChildRecord) -> SpawnOptions {
        var options = options
        if options.name == nil { options.name = record.id }
        options.failureDecider = { [self] failure in actorFailed(record, failure) }
        return options
    }

    func superviseActor<Message: Sendable>(
        id: String, options: SpawnOptions, policy: ChildPolicy,
        spawn: (SpawnOptions) -> ActorRef<Message>
    ) throws(SupervisionError) -> ActorRef<Message> {
        let record = try reserve(id: id, kind: .actor, policy: policy, options: options)
        let ref = spawn(childOptions(options, for: record))
        attach(record, target: .actor(ref), watching: [ref], whenAllStopped: nil)
        return ref
    }

    func superviseAnyPool<Message: Sendable>(
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
    func attach(
        _ record: ChildRecord, target: ChildTarget, watching refs: [any SupervisedRef],
        whenAllStopped: (@Sendable () -> Bool)?
    ) {
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

    func stopDetached(_ target: ChildTarget) {
        switch target {
        case .actor(let ref): ref.stop()
        case .pool(let pool): for member in pool.members() { member.stop() }
        case .supervisor(let nested): _ = nested.stopEverything(closing: true, origin: nil)
        }
    }

    /// A supervised actor (or a whole pool) stopped: if supervision did not stop it, forget it.
    /// On the thread that stopped it.
    func childTerminated(_ record: ChildRecord, reason: TerminationReason) {
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
    func actorFailed(_ record: ChildRecord, _ failure: ActorFailure) -> FailureDirective {
        handleFailure(of: record, error: failure.error, origin: FailureOrigin(record: record, actor: failure.actor))
            .directive ?? .stop
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
        let now = self.now
        var plan = SupervisionPlan()
        let outcome = state.withLock { state in
            plan = state.makePlan()
            return state.planFailure(
                of: record, error: error, decision: decision, origin: origin, scope: strategy.scope,
                now: now, into: &plan)
        }
        switch outcome {
        case .detached:
            return FailureResolution(directive: nil, applied: nil)
        case .escalate(let parent, let group):
            deliver(plan)
            return FailureResolution(
                directive: parent.handleFailure(of: group, error: error, origin: origin).directive,
                applied: .escalate)
        case .handled(let applied):
            return FailureResolution(directive: execute(plan, origin: origin), applied: applied)
        }
    }

    /// The parent restarts this nested supervisor as a whole: every child restarts.
    func restartAll(_ order: RestartOrder, origin: FailureOrigin?) -> FailureDirective? {
        var plan = SupervisionPlan()
        state.withLock { state in
            plan = state.makePlan()
            let targets = state.order.compactMap { state.entries[$0]?.record }.map {
                ($0, RestartCause.enclosingSupervisor)
            }
            state.planRestart(targets, order: order, delayed: origin?.record, failingActor: origin?.actor, into: &plan)
        }
        return execute(plan, origin: origin)
    }

    /// Stops every child; `closing`: for good (the parent stopped or removed this supervisor).
    func stopEverything(closing: Bool, origin: FailureOrigin?) -> FailureDirective? {
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
    func execute(_ plan: SupervisionPlan, origin: FailureOrigin?) -> FailureDirective? {
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
                    for member in pool.members() where !(isOrigin && member.address.id == origin?.actor.id) {
                        member.stop()
                    }
                case .supervisor(let nested)?:
                    if let nestedDirective = nested.stopEverything(closing: true, origin: origin) {
                        directive = nestedDirective
                    }
                case nil:
                    break  // `attach` finds the entry gone and stops it
                }
            }
        }
        deliver(plan)
        return directive
    }

    func deliver(_ plan: SupervisionPlan) {
        for event in plan.events {
            observers.forEach { $0(event) }
        }
    }
}
