import Troupe

/// The actor whose failure is being handled, and the child it belongs to (in the supervisor
/// where it failed; an escalation carries it up unchanged).
struct FailureOrigin: Sendable {
    let record: ChildRecord
    let actor: ActorAddress
}
