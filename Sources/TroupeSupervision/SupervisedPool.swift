import Troupe

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
