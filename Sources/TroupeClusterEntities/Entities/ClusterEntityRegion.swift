import Distributed
import Logging
import NIOCore
import Synchronization
import Troupe
internal import TroupeLocks
import TroupeCluster
import TroupeClusterMembership
import TroupeVirtualActors

/// A kind of virtual actor on a `ClusterSystem`: every identity has one home
/// among the nodes that hold the kind, chosen by rendezvous hashing over them, and a
/// reference from ``entity(_:)`` reaches it from any node. On its home node the identity is
/// an entity of the local `EntityRegion`: activated by its first
/// message, passivated when idle, activated again by the next.
///
/// Make the region with the same kind on every node that should hold entities; a node that
/// only sends can make it too (it then holds its share as well).
///
/// ```swift
/// let carts = try await ClusterEntityRegion(cluster: cluster, kind: EntityKind("cart") { id in
///     Cart(owner: id.key)
/// })
/// carts.entity("user-42").tell(.add("apples"))
/// let total = try await carts.entity("user-42").ask(CartTotal())
/// ```
///
/// When nodes join or leave, placement moves the identities they win or held (about 1/N of
/// them): activations whose identity moved are passivated here, and the next message
/// activates the identity on its new home (its state, for a durable entity, from the
/// store). See the module's documentation for what is, and is not yet, guaranteed while
/// nodes disagree about the members.
public final class ClusterEntityRegion<Message: Codable & Sendable>: Sendable {
    /// The kind's name.
    public let name: String
    public let cluster: ClusterSystem
    /// This node's directory of the kind: the activations held here.
    public let local: EntityRegion<Message>
    /// How many times an item is sent on to the node that owns its identity before it is
    /// delivered where it is (while nodes disagree about the members).
    public static var maximumHops: UInt8 { 3 }

    let host: EntityHost
    let key: ReceptionKey<EntityHost>
    let view: Locked<PlacementView>
    let asks = Locked(PendingAsks())
    let requestTypes = Locked([String: any EntityRequest<Message>.Type]())
    let nextAskID = Atomic<UInt64>(0)
    let hasLeft = Atomic<Bool>(false)
    let listening = Locked<Task<Void, Never>?>(nil)
    let logger: Logger
    let counters = Counters()

    final class Counters: Sendable {
        let sent = Atomic<Int>(0)
        let received = Atomic<Int>(0)
        let forwarded = Atomic<Int>(0)
        let afterHopLimit = Atomic<Int>(0)
        let handedOff = Atomic<Int>(0)
        let lost = Atomic<Int>(0)
        let undeliverable = Atomic<Int>(0)
    }

    /// Registers `kind` on this node and joins the kind's members: returns once this node is
    /// among them. Activations run in the cluster's actor system.
    public convenience init<Actor: SpawnableActor>(
        cluster: ClusterSystem, kind: EntityKind<Actor>
    ) async throws(ClusterEntityError) where Actor.Definition.Message == Message {
        let local: EntityRegion<Message>
        do {
            local = try EntityRegion(system: cluster.actorSystem, kind: kind)
        } catch {
            throw .registration("\(error)")
        }
        try self.init(cluster: cluster, local: local)
    }

    /// Registers a kind whose activations `spawn` makes (a durable actor of
    /// TroupePersistence, for one), as `EntityRegion.init(system:name:idleTimeout:activeLimit:spawn:)`.
    public convenience init(
        cluster: ClusterSystem, name: String, idleTimeout: Duration? = .seconds(120), activeLimit: Int? = nil,
        spawn: @escaping @Sendable (EntityID) -> ActorRef<Message>
    ) async throws(ClusterEntityError) {
        let local: EntityRegion<Message>
        do {
            local = try EntityRegion(
                system: cluster.actorSystem, name: name, idleTimeout: idleTimeout, activeLimit: activeLimit,
                spawn: spawn)
        } catch {
            throw .registration("\(error)")
        }
        try self.init(cluster: cluster, local: local)
    }

    private init(cluster: ClusterSystem, local: EntityRegion<Message>) throws(ClusterEntityError) {
        name = local.name
        self.cluster = cluster
        self.local = local
        key = ReceptionKey(EntityHost.self, id: "troupe.entities/\(local.name)")
        var logger = cluster.settings.logger
        logger[metadataKey: "entity_kind"] = "\(local.name)"
        self.logger = logger
        view = Locked(PlacementView(members: []))
        let inbox = InboxForwarder()
        host = EntityHost(actorSystem: cluster, inbox: inbox)
        inbox.target = self
        do {
            try cluster.receptionist.checkIn(host, with: key)
        } catch {
            throw .registration("\(error)")
        }
        // The listing now has this node's check-in in it; later ones come from the stream.
        update(members: cluster.receptionist.lookup(key))
        let listing = cluster.receptionist.listing(of: key)
        let task = Task { [weak self] in
            for await hosts in listing {
                guard let self else { return }
                self.update(members: hosts)
            }
        }
        listening.withLock { $0 = task }
    }

    deinit {
        listening.withLock { $0 }?.cancel()
    }

    /// The reference to the entity with `key`, valid on every node, before the entity exists
    /// and after it is passivated.
    public func entity(_ key: String) -> ClusterEntityRef<Message> {
        ClusterEntityRef(region: self, key: key)
    }

    /// The node that owns `key` in this node's view of the members (nil when none holds the
    /// kind, after ``leave()`` on the last).
    public func owner(of key: String) -> ClusterNode? {
        view.withLock { $0 }.owner(of: key)?.node
    }

    /// The nodes holding the kind, as this node sees them now (this one included, until it
    /// leaves).
    public var members: [ClusterNode] { view.withLock { $0 }.members.map(\.node) }

    /// Waits until at least `count` nodes hold the kind, as this node sees them: start
    /// sending then, so that the first messages do not activate entities on a node that has
    /// not heard of the others yet (they would move as the others are heard of).
    public func awaitMembers(_ count: Int, timeout: Duration) async throws(ClusterEntityError) {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while members.count < count {
            if clock.now >= deadline {
                throw .tooFewMembers(expected: count, present: members.count, after: timeout)
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// The region's counters on this node now.
    public var statistics: ClusterEntityStatistics {
        ClusterEntityStatistics(
            local: local.statistics, members: members.count,
            sentToOtherNodes: counters.sent.load(ordering: .relaxed),
            receivedFromOtherNodes: counters.received.load(ordering: .relaxed),
            forwarded: counters.forwarded.load(ordering: .relaxed),
            deliveredAfterHopLimit: counters.afterHopLimit.load(ordering: .relaxed),
            handedOff: counters.handedOff.load(ordering: .relaxed),
            lostInTransit: counters.lost.load(ordering: .relaxed),
            undeliverable: counters.undeliverable.load(ordering: .relaxed),
            asksWaiting: asks.withLock { $0.waitingCount })
    }

    /// Takes this node out of the kind's members: checks its host out of the receptionist
    /// (the other nodes then place its identities among themselves) and passivates its
    /// activations, which finish the messages they have. Items that reach this node later are
    /// sent on to their new owners. Idempotent.
    public func leave() {
        guard !hasLeft.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cluster.receptionist.checkOut(host, from: key)
        view.withLock { view in view = PlacementView(members: view.members.filter { $0.node != cluster.node }) }
        counters.handedOff.add(local.passivateAll(), ordering: .relaxed)
    }
}

/// Breaks the cycle region → host → region: the host holds this, which holds the region weakly.
final class InboxForwarder: EntityInbox, @unchecked Sendable {  // `target` is set once, before the host is reachable
    weak var target: (any EntityInbox)?
    func receive(_ batch: EntityBatch) { target?.receive(batch) }
    func receiveAsk(_ envelope: EntityEnvelope) async -> EntityAnswer {
        guard let target else {
            return EntityAnswer(askID: envelope.askID, code: .undeliverable, payload: Array("the region is gone".utf8))
        }
        return await target.receiveAsk(envelope)
    }
    func refused(_ error: EntityWire.Malformed) { target?.refused(error) }
}
