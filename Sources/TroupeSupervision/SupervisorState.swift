import Troupe

/// What the supervisor needs from an `ActorRef` of any message type.
protocol SupervisedRef: Sendable {
    var address: ActorAddress { get }
    var isStopped: Bool { get }
    func requestRestart(reason: any Error, after delay: Duration) -> Bool
    func stop()
    func whenTerminated(_ callback: @escaping @Sendable (Terminated) -> Void)
    /// Sends `message` when the actor accepts its type (per-type handler actors accept any
    /// value); nil when it does not.
    func tellIfAccepted<Value: Sendable>(_ message: Value) -> TellOutcome?
    /// The message type's name, for errors.
    var messageTypeName: String { get }
}

extension ActorRef: SupervisedRef {
    func tellIfAccepted<Value: Sendable>(_ message: Value) -> TellOutcome? {
        if let typed = message as? Message { return tell(typed) }
        if let handlers = self as? ActorRef<AnyMessage> { return handlers.tell(message) }
        return nil
    }

    var messageTypeName: String { "\(Message.self)" }
}

/// A supervised pool, type-erased.
struct SupervisedPool: Sendable {
    /// The `ActorPool<Message>`.
    let pool: any Sendable
    let typeName: String
    /// The current members (a growing pool may add some).
    let members: @Sendable () -> [any SupervisedRef]
    let isStopped: @Sendable () -> Bool

    init<Message: Sendable>(_ pool: ActorPool<Message>) {
        self.pool = pool
        typeName = "ActorPool<\(Message.self)>"
        members = { pool.members }
        isStopped = { pool.isStopped }
    }
}

/// What a child id stands for.
enum ChildTarget: Sendable {
    case actor(any SupervisedRef)
    case pool(SupervisedPool)
    case supervisor(Supervisor)

    var typeName: String {
        switch self {
        case .actor(let ref): String(describing: type(of: ref))
        case .pool(let pool): pool.typeName
        case .supervisor: "Supervisor"
        }
    }
}

/// A child's identity and policy: immutable, shared with the failure deciders of its actors,
/// which find their entry by it (an id can be reused after removal; the record cannot).
final class ChildRecord: Sendable {
    enum Kind: Sendable { case actor, pool, supervisor }

    let id: String
    let kind: Kind
    let policy: ResolvedPolicy

    init(id: String, kind: Kind, policy: ResolvedPolicy) {
        self.id = id
        self.kind = kind
        self.policy = policy
    }
}

/// The actor whose failure is being handled, and the child it belongs to (in the supervisor
/// where it failed; an escalation carries it up unchanged).
struct FailureOrigin: Sendable {
    let record: ChildRecord
    let actor: ActorAddress
}

/// One child's mutable supervision state.
struct ChildEntry {
    let record: ChildRecord
    /// `nil` while the child is being spawned.
    var target: ChildTarget?
    /// When the restarts still inside the intensity window were decided, oldest first.
    var restartTimes: [ContinuousClock.Instant] = []
    var consecutiveRestarts = 0
    /// When the last backoff delay ended (or ends).
    var restartDue: ContinuousClock.Instant?
    var restarts = 0
    var failures = 0

    init(record: ChildRecord) { self.record = record }

    /// Records a restart for the intensity budget; false (recording nothing) when it would
    /// exceed it.
    mutating func admitRestart(at now: ContinuousClock.Instant) -> Bool {
        let intensity = record.policy.intensity
        guard !intensity.isUnlimited else { return true }
        let cutoff = now - intensity.window
        if let firstKept = restartTimes.firstIndex(where: { $0 > cutoff }) {
            restartTimes.removeFirst(firstKept)
        } else {
            restartTimes.removeAll()
        }
        guard restartTimes.count < intensity.maxRestarts else { return false }
        restartTimes.append(now)
        return true
    }

    /// The backoff delay of the restart being decided now.
    mutating func nextBackoffDelay(at now: ContinuousClock.Instant) -> Duration {
        let backoff = record.policy.backoff
        guard !backoff.isNone else { return .zero }
        if let restartDue, now - restartDue >= backoff.resetAfter { consecutiveRestarts = 0 }
        consecutiveRestarts += 1
        let delay = backoff.delay(forConsecutiveRestart: consecutiveRestarts)
        restartDue = now + delay
        return delay
    }
}

/// A restart to order, as planned under the lock.
struct RestartOrder: Sendable {
    let reason: any Error
    /// The backoff every actor of the restarted group waits; the failing message's fate (for the origin).
    let originDelay: Duration
    let failingMessage: FailureDirective.FailingMessage
}

/// What to do once the lock is released.
enum SupervisionOperation {
    case restart(ChildRecord, ChildTarget?, RestartOrder)
    case stop(ChildRecord, ChildTarget?)
}

/// Operations and events collected under the lock, carried out after it is released.
struct SupervisionPlan {
    var operations: [SupervisionOperation] = []
    var events: [SupervisionEvent] = []
    var observers: [@Sendable (SupervisionEvent) -> Void] = []
    /// Decided directly for the failing actor (resume; a pool member's own restart).
    var originDirective: FailureDirective?
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

/// Everything a supervisor knows, under its one lock.
struct SupervisorState {
    let name: String
    var entries: [String: ChildEntry] = [:]
    /// Ids in supervision order.
    var order: [String] = []
    /// Links: parent id → linked child ids (in link order), and child id → parent ids.
    var linkedChildren: [String: [String]] = [:]
    var linkedParents: [String: [String]] = [:]
    var observers: [(id: UInt64, observer: @Sendable (SupervisionEvent) -> Void)] = []
    var nextObserverID: UInt64 = 0
    /// Stopped by its parent: takes no new children.
    var isClosed = false
    var parent: ParentLink?

    init(name: String, parent: ParentLink?) {
        self.name = name
        self.parent = parent
    }

    func record(_ id: String) -> ChildRecord? { entries[id]?.record }

    func isCurrent(_ record: ChildRecord) -> Bool { entries[record.id]?.record === record }

    /// Starts a plan: snapshots the observers.
    func makePlan() -> SupervisionPlan {
        var plan = SupervisionPlan()
        plan.observers = observers.map(\.observer)
        return plan
    }

    func event(_ id: String, _ kind: SupervisionEvent.Kind, error: (any Error)?, actor: ActorAddress? = nil,
               into plan: inout SupervisionPlan) {
        guard !plan.observers.isEmpty else { return }
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
    mutating func planFailure(of record: ChildRecord, error: any Error, decision: SupervisionDirective,
                              origin: FailureOrigin?, scope: RestartScope, now: ContinuousClock.Instant,
                              into plan: inout SupervisionPlan) -> FailurePlanOutcome {
        guard !isClosed, var entry = entries[record.id], entry.record === record else { return .detached }
        let actor = origin?.record === record ? origin?.actor : nil
        entry.failures += 1
        var decision = decision
        var exceeded = false
        if decision == .restart && !entry.admitRestart(at: now) {
            let intensity = record.policy.intensity
            event(record.id, .intensityExceeded(restarts: entry.restartTimes.count, within: intensity.window),
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
    mutating func planRestart(_ targets: [(ChildRecord, RestartCause)], order: RestartOrder, delayed: ChildRecord?,
                              failingActor: ActorAddress? = nil, into plan: inout SupervisionPlan) {
        var queue = targets
        var next = 0
        var visited: Set<String> = []
        while next < queue.count {
            let (record, cause) = queue[next]
            next += 1
            guard visited.insert(record.id).inserted, let entry = entries[record.id], entry.record === record else { continue }
            entries[record.id]?.restarts += 1
            plan.operations.append(.restart(record, entry.target, order))
            let isFailing = record === delayed
            event(record.id, .restarted(cause: cause, delay: order.originDelay), error: order.reason,
                  actor: isFailing ? failingActor : nil, into: &plan)
            for child in linkedChildren[record.id] ?? [] {
                if let linked = entries[child]?.record { queue.append((linked, .linkedParent(record.id))) }
            }
        }
    }

    /// Stops and removes `targets` and, recursively, the children linked to them.
    mutating func planStop(_ targets: [(ChildRecord, StopCause)], error: (any Error)?, failingActor: ActorAddress? = nil,
                           into plan: inout SupervisionPlan) {
        var queue = targets
        var next = 0
        var visited: Set<String> = []
        var removed: [ChildRecord] = []
        while next < queue.count {
            let (record, cause) = queue[next]
            next += 1
            guard visited.insert(record.id).inserted, let entry = entries[record.id], entry.record === record else { continue }
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
