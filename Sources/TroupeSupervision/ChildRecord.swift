import Troupe

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
