import Troupe

/// Everything a supervisor knows, under its one lock.
struct SupervisorState {
    let name: String
    var entries: [String: ChildEntry] = [:]
    /// Ids in supervision order.
    var order: [String] = []
    /// Links: parent id → linked child ids (in link order), and child id → parent ids.
    var linkedChildren: [String: [String]] = [:]
    var linkedParents: [String: [String]] = [:]
    /// The supervisor's observers (a thread-safe list of its own; not guarded by the state's lock).
    let observers: ObserverList<@Sendable (SupervisionEvent) -> Void>
    /// Stopped by its parent: takes no new children.
    var isClosed = false
    var parent: ParentLink?

    init(name: String, parent: ParentLink?, observers: ObserverList<@Sendable (SupervisionEvent) -> Void>) {
        self.name = name
        self.observers = observers
        self.parent = parent
    }

    func record(_ id: String) -> ChildRecord? { entries[id]?.record }

    func isCurrent(_ record: ChildRecord) -> Bool { entries[record.id]?.record === record }

    /// Starts a plan, which records events when someone observes them.
    func makePlan() -> SupervisionPlan {
        var plan = SupervisionPlan()
        plan.recordsEvents = !observers.isEmpty
        return plan
    }

    func event(
        _ id: String, _ kind: SupervisionEvent.Kind, error: (any Error)?, actor: ActorAddress? = nil,
        into plan: inout SupervisionPlan
    ) {
        guard plan.recordsEvents else { return }
        plan.events.append(SupervisionEvent(supervisor: name, id: id, kind: kind, error: error, actor: actor))
    }

    /// Whether `ancestor` can be reached from `id` by following links to parents.
    func isLinkedAncestor(_ ancestor: String, of id: String) -> Bool {
        var pending = [id]
        var seen: Set<String> = []
        while let current = pending.popLast() {
            if current == ancestor { return true }
            guard seen.insert(current).inserted else { continue }
            pending.append(contentsOf: linkedParents[current] ?? [])
        }
        return false
    }

    /// The children a decision for `record`'s failure applies to, with it first.
    func scopeTargets(of record: ChildRecord, scope: RestartScope) -> [ChildRecord] {
        switch scope {
        case .oneForOne:
            return [record]
        case .allForOne:
            return [record] + order.compactMap { $0 == record.id ? nil : entries[$0]?.record }
        case .restForOne:
            guard let position = order.firstIndex(of: record.id) else { return [record] }
            return order[position...].compactMap { entries[$0]?.record }
        }
    }

    // MARK: Planning (under the lock)

    /// Handles a failure of `record` decided as `decision` (by its decider, outside the lock).
    mutating func planFailure(
        of record: ChildRecord, error: any Error, decision: SupervisionDirective,
        origin: FailureOrigin?, scope: RestartScope, now: ContinuousClock.Instant,
        into plan: inout SupervisionPlan
    ) -> FailurePlanOutcome {
        guard !isClosed, var entry = entries[record.id], entry.record === record else { return .detached }
        let actor = origin?.record === record ? origin?.actor : nil
        entry.failures += 1
        var decision = decision
        var exceeded = false
        if decision == .restart && !entry.admitRestart(at: now) {
            let intensity = record.policy.intensity
            event(
                record.id, .intensityExceeded(restarts: entry.restartTimes.count, within: intensity.window),
                error: error, actor: actor, into: &plan)
            decision = intensity.whenExceeded == .stop ? .stop : .escalate
            exceeded = true
        }
        switch decision {
        case .resume:
            entries[record.id] = entry
            event(record.id, .resumed, error: error, actor: actor, into: &plan)
            if origin != nil { plan.originDirective = .resume }
        case .restart:
            let delay = entry.nextBackoffDelay(at: now)
            entries[record.id] = entry
            let order = RestartOrder(reason: error, originDelay: delay, failingMessage: record.policy.failingMessage)
            if record.kind == .pool, origin?.record === record {
                // One member failed: only that member restarts (its mailbox kept by the core).
                entries[record.id]?.restarts += 1
                event(record.id, .restarted(cause: .failed, delay: delay), error: error, actor: actor, into: &plan)
                plan.originDirective = .restart(after: delay, failingMessage: order.failingMessage)
                return .handled(.restart)
            }
            let targets = scopeTargets(of: record, scope: scope).map { target in
                (target, target === record ? RestartCause.failed : .sibling(record.id))
            }
            planRestart(targets, order: order, delayed: origin == nil ? nil : record, failingActor: actor, into: &plan)
        case .stop:
            entries[record.id] = entry
            let targets = scopeTargets(of: record, scope: scope).map { target in
                (target, target === record ? (exceeded ? StopCause.intensityExceeded : .failed) : .sibling(record.id))
            }
            planStop(targets, error: error, failingActor: actor, into: &plan)
        case .escalate:
            entries[record.id] = entry
            let parentSupervisor = parent?.supervisor
            event(record.id, .escalated(toParent: parentSupervisor?.name), error: error, actor: actor, into: &plan)
            if let parentSupervisor, let parent { return .escalate(parentSupervisor, parent.record) }
            planStop([(record, .escalated)], error: error, failingActor: actor, into: &plan)
        }
        return .handled(decision)
    }

    /// Restarts `targets` and, recursively, the children linked to every restarted child.
    /// `delayed` is the failing child, whose event reports the backoff delay.
    mutating func planRestart(
        _ targets: [(ChildRecord, RestartCause)], order: RestartOrder, delayed: ChildRecord?,
        failingActor: ActorAddress? = nil, into plan: inout SupervisionPlan
    ) {
        var queue = targets
        var next = 0
        var visited: Set<String> = []
        while next < queue.count {
            let (record, cause) = queue[next]
            next += 1
            guard visited.insert(record.id).inserted, let entry = entries[record.id], entry.record === record else {
                continue
            }
            entries[record.id]?.restarts += 1
            plan.operations.append(.restart(record, entry.target, order))
            let isFailing = record === delayed
            event(
                record.id, .restarted(cause: cause, delay: order.originDelay), error: order.reason,
                actor: isFailing ? failingActor : nil, into: &plan)
            for child in linkedChildren[record.id] ?? [] {
                if let linked = entries[child]?.record { queue.append((linked, .linkedParent(record.id))) }
            }
        }
    }

    /// Stops and removes `targets` and, recursively, the children linked to them.
    mutating func planStop(
        _ targets: [(ChildRecord, StopCause)], error: (any Error)?, failingActor: ActorAddress? = nil,
        into plan: inout SupervisionPlan
    ) {
        var queue = targets
        var next = 0
        var visited: Set<String> = []
        var removed: [ChildRecord] = []
        while next < queue.count {
            let (record, cause) = queue[next]
            next += 1
            guard visited.insert(record.id).inserted, let entry = entries[record.id], entry.record === record else {
                continue
            }
            removed.append(record)
            plan.operations.append(.stop(record, entry.target))
            let isFailing = record === targets.first?.0
            event(record.id, .stopped(cause: cause), error: error, actor: isFailing ? failingActor : nil, into: &plan)
            for child in linkedChildren[record.id] ?? [] {
                if let linked = entries[child]?.record { queue.append((linked, .linkedParent(record.id))) }
            }
        }
        for record in removed { remove(record.id) }
    }

    /// Forgets a child and its links (its linked children stay, unlinked from it).
    mutating func remove(_ id: String) {
        guard entries.removeValue(forKey: id) != nil else { return }
        order.removeAll { $0 == id }
        for child in linkedChildren.removeValue(forKey: id) ?? [] {
            linkedParents[child]?.removeAll { $0 == id }
            if linkedParents[child]?.isEmpty == true { linkedParents[child] = nil }
        }
        for parent in linkedParents.removeValue(forKey: id) ?? [] {
            linkedChildren[parent]?.removeAll { $0 == id }
            if linkedChildren[parent]?.isEmpty == true { linkedChildren[parent] = nil }
        }
    }
}

/// The parent of a nested supervisor: weak, so that a parent dropped by its owner (with no
/// actor left to hold it) does not live on through its nested supervisors.
struct ParentLink {
    weak var supervisor: Supervisor?
    let record: ChildRecord
}

/// How a failure was handled under the lock.
enum FailurePlanOutcome {
    /// The child is no longer supervised (removed meanwhile): the failing actor stops.
    case detached
    case handled(SupervisionDirective)
    /// Hand it to the parent as a failure of `record` (the nested supervisor's id there).
    case escalate(Supervisor, ChildRecord)
}
