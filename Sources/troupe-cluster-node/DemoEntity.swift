import Troupe
import TroupePersistence

/// The entity of the kind "demo" (`--entities`): durable, so that the observer's page has
/// entities and a durable store's lag per node to show. Each touch stores an event in the node's
/// journal (in memory: the node's store goes with its process).
struct DemoEntity: EventSourcedActor {
    enum Command: Codable, Sendable { case touch }
    struct Touched: Codable, Sendable {}
    typealias Event = Touched
    /// How many touches this identity has stored.
    typealias State = Int

    let persistenceID: PersistenceID
    var emptyState: Int { 0 }
    static let eventCodec = PersistenceCodec<Touched>.json(typeName: "demo-touched")

    func handle(_ command: Command, state: Int, context: EventSourcedContext<Self>) -> Effect<Self> {
        .persist(Touched())
    }

    func apply(_ event: Touched, to touches: inout Int) { touches += 1 }
}
