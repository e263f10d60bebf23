import Troupe

/// Operations and events collected under the lock, carried out after it is released.
struct SupervisionPlan {
    var operations: [SupervisionOperation] = []
    var events: [SupervisionEvent] = []
    /// Whether events are collected (someone observed the supervisor when the plan began).
    var recordsEvents = false
    /// Decided directly for the failing actor (resume; a pool member's own restart).
    var originDirective: FailureDirective?
}

/// What to do once the lock is released.
enum SupervisionOperation {
    case restart(ChildRecord, ChildTarget?, RestartOrder)
    case stop(ChildRecord, ChildTarget?)
}
