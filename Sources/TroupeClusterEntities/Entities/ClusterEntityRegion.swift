import Distributed
import Logging
import NIOCore
import Synchronization
import Troupe
internal import TroupeLocks
import TroupeCluster
import TroupeClusterMembership
import TroupePersistence
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
    /// How many times in all an item may be sent on (in rounds of ``maximumHops``, a pause
    /// between rounds) before it is undeliverable.
    public static var maximumForwards: UInt8 { 60 }

    /// How long a change of members may wait for the other members' confirmations (see
    /// the module's documentation, "Handoff") before this node starts activations anyway.
    public let handoffTimeout: Duration

    let host: EntityHost
    let key: ReceptionKey<EntityHost>
    let placement: Locked<Placement>
    /// The task that passivates what moved away after a change and then confirms the view.
    let confirming = Locked<(generation: UInt64, task: Task<Void, Never>)?>(nil)
    /// The handoff generation whose view that task last confirmed to every other member, and
    /// where the confirmation went: each line, and its ``Outbox/mark()`` just after it. Set
    /// under the placement's lock (that order, never the reverse).
    let confirmations = Locked<(generation: UInt64, lines: [(Outbox, UInt64)])>((0, []))
    let asks = Locked(PendingAsks())
    let requestTypes = Locked([String: any EntityRequest<Message>.Type]())
    let nextAskID = Atomic<UInt64>(0)
    let hasLeft = Atomic<Bool>(false)
    let listening = Locked<Task<Void, Never>?>(nil)
    let logger: Logger
    let counters = Counters()
    /// The other members' loads for the snapshot section, asked only while it is read.
    let loadWatch = LoadWatch()

    final class Counters: Sendable {
        let sent = Atomic<Int>(0)
        let received = Atomic<Int>(0)
        let forwarded = Atomic<Int>(0)
        let afterHopLimit = Atomic<Int>(0)
        let handedOff = Atomic<Int>(0)
        let lost = Atomic<Int>(0)
        let undeliverable = Atomic<Int>(0)
        let parked = Atomic<Int>(0)
        let handoffs = Atomic<Int>(0)
        let handoffDurations = LatencyRecorder()
        /// Set as the region deinitialises: its snapshot section goes with it.
        let regionGone = Atomic<Bool>(false)
    }

    /// Registers `kind` on this node and joins the kind's members: returns once this node is
    /// among them. Activations run in the cluster's actor system.
    ///
    /// `handoffTimeout`: how long this node waits, after a change of members, for the others
    /// to confirm that they no longer run what moved (see the module's documentation,
    /// "Handoff").
    public convenience init<Actor: SpawnableActor>(
        cluster: ClusterSystem, kind: EntityKind<Actor>, handoffTimeout: Duration = .seconds(10)
    ) async throws(ClusterEntityError) where Actor.Definition.Message == Message {
        let local: EntityRegion<Message>
        do {
            local = try EntityRegion(system: cluster.actorSystem, kind: kind)
        } catch {
            throw .registration("\(error)")
        }
        try self.init(cluster: cluster, local: local, handoffTimeout: handoffTimeout)
    }

    /// Registers a kind whose activations `spawn` makes (a durable actor of
    /// TroupePersistence, for one), as `EntityRegion.init(system:name:idleTimeout:activeLimit:spawn:)`.
    public convenience init(
        cluster: ClusterSystem, name: String, idleTimeout: Duration? = .seconds(120), activeLimit: Int? = nil,
        handoffTimeout: Duration = .seconds(10), spawn: @escaping @Sendable (EntityID) -> ActorRef<Message>
    ) async throws(ClusterEntityError) {
        let local: EntityRegion<Message>
        do {
            local = try EntityRegion(
                system: cluster.actorSystem, name: name, idleTimeout: idleTimeout, activeLimit: activeLimit,
                spawn: spawn)
        } catch {
            throw .registration("\(error)")
        }
        try self.init(cluster: cluster, local: local, handoffTimeout: handoffTimeout)
    }

    private init(
        cluster: ClusterSystem, local: EntityRegion<Message>, handoffTimeout: Duration
    ) throws(ClusterEntityError) {
        precondition(handoffTimeout > .zero, "ClusterEntityRegion \(local.name): handoffTimeout must be positive")
        name = local.name
        self.handoffTimeout = handoffTimeout
        self.cluster = cluster
        self.local = local
        key = ReceptionKey(EntityHost.self, id: "troupe.entities/\(local.name)")
        var logger = cluster.settings.logger
        logger[metadataKey: "entity_kind"] = "\(local.name)"
        // Several nodes often share one process (tests, simulations): say whose region it is.
        logger[metadataKey: "cluster_node"] = "\(cluster.node.uid)"
        self.logger = logger
        placement = Locked(Placement())
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
        // What the section reads, not the region: a weak reference would give the region a
        // side table, and every ClusterEntityRef copy's retain of it would take the slow path.
        let (localStatistics, node) = (local.statisticsReader, cluster.node)
        // The system weakly: it holds this provider.
        cluster.actorSystem.provideSnapshotSection(key: SectionKey(kind: name, node: cluster.node.uid)) {
            [name, counters, placement, asks, loadWatch, weak system = cluster.actorSystem] in
            guard !counters.regionGone.load(ordering: .acquiring) else { return nil }
            var section = Self.totals(counters: counters, placement: placement, asks: asks).section(instance: name)
            let known = loadWatch.read(
                ask: { [weak system] in
                    let statistics = localStatistics()
                    return await EntityHost.loads(
                        of: placement.withLock { $0.hosts },
                        local: NodeEntityLoad(
                            node: node, active: statistics.active, activations: statistics.activations,
                            journalLag: system.flatMap(Journal.lag(in:))))
                },
                isGone: { counters.regionGone.load(ordering: .acquiring) })
            section.tables.append(LoadWatch.table(known, now: .now))
            return section
        }
    }

    /// The snapshot section's key: one region of a kind per node (several nodes may share an
    /// actor system).
    struct SectionKey: Hashable, Sendable {
        let kind: String
        let node: UInt64
    }

    deinit {
        listening.withLock { $0 }?.cancel()
        confirming.withLock { $0 }?.task.cancel()
        counters.regionGone.store(true, ordering: .releasing)
        // The snapshot section holds the placement until the next snapshot: not the lines. The
        // old value is released after the lock (a line's host checks out of the receptionist).
        let released = placement.withLock { placement in
            defer { placement = Placement() }
            return placement
        }
        withExtendedLifetime(released) {}
    }

    /// The reference to the entity with `key`, valid on every node, before the entity exists
    /// and after it is passivated.
    public func entity(_ key: String) -> ClusterEntityRef<Message> {
        ClusterEntityRef(region: self, key: key)
    }

    /// The node that owns `key` in this node's view of the members (nil when none holds the
    /// kind, after ``leave(timeout:)`` on the last).
    public func owner(of key: String) -> ClusterNode? {
        // The key hashed before the lock; under it, only the members' scores and one copy of
        // the owner's node (no reference to the view or its line taken and dropped).
        let hash = RendezvousPlacement.keyHash(key)
        return placement.withLock { placement in
            let view = placement.view
            return RendezvousPlacement.owner(keyHash: hash, among: view.uids, mixed: view.mixedUIDs).map {
                view.members[$0].node
            }
        }
    }

    /// The nodes holding the kind, as this node sees them now (this one included, until it
    /// leaves).
    public var members: [ClusterNode] { placement.withLock { $0.view }.members.map(\.node) }

    /// Whether every other member has confirmed this node's current view of the members: no
    /// identity that moved still runs where it was, so activations start here without waiting.
    /// False from a change of members until then (see the module's documentation, "Handoff").
    public var isSettled: Bool { placement.withLock { $0.handoff.isSettled } }

    /// Waits until at least `count` nodes hold the kind, as this node sees them, and they have
    /// confirmed that view (``isSettled``): start sending then, so that the first messages do
    /// not activate entities on a node that has not heard of the others yet (they would move
    /// as the others are heard of).
    public func awaitMembers(_ count: Int, timeout: Duration) async throws(ClusterEntityError) {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while members.count < count || !isSettled {
            if clock.now >= deadline {
                let (present, unconfirmed) = placement.withLock { ($0.view.members.count, $0.unconfirmed) }
                guard present >= count else { throw .tooFewMembers(expected: count, present: present, after: timeout) }
                throw .notSettled(members: present, unconfirmed: unconfirmed.map { "\($0)" }, after: timeout)
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// What every member of the kind holds now, by node: this node's at once, the others'
    /// asked of them at the same time (one call each, bounded by the cluster's `callTimeout`;
    /// a member that does not answer is left out). The snapshot section's `nodes` table shows
    /// the same, asked once a second while snapshots are read.
    public func loadByNode() async -> [NodeEntityLoad] {
        await EntityHost.loads(of: placement.withLock { $0.hosts }, local: localLoad)
    }

    /// This node's share.
    var localLoad: NodeEntityLoad {
        let statistics = local.statistics
        return NodeEntityLoad(
            node: cluster.node, active: statistics.active, activations: statistics.activations,
            journalLag: Journal.lag(in: cluster.actorSystem))
    }

    /// The region's counters on this node now.
    public var statistics: ClusterEntityStatistics {
        ClusterEntityStatistics(
            local: local.statistics, Self.totals(counters: counters, placement: placement, asks: asks))
    }

    /// The region's own counters (the local directory's are its own section).
    static func totals(
        counters: Counters, placement: Locked<Placement>, asks: Locked<PendingAsks>
    ) -> ClusterEntityStatistics.Totals {
        let (handoff, members) = placement.withLock { ($0.handoff, $0.view.members.count) }
        return .init(
            members: members,
            sentToOtherNodes: counters.sent.load(ordering: .relaxed),
            receivedFromOtherNodes: counters.received.load(ordering: .relaxed),
            forwarded: counters.forwarded.load(ordering: .relaxed),
            retriedAfterHopLimit: counters.afterHopLimit.load(ordering: .relaxed),
            handedOff: counters.handedOff.load(ordering: .relaxed),
            lostInTransit: counters.lost.load(ordering: .relaxed),
            undeliverable: counters.undeliverable.load(ordering: .relaxed),
            asksWaiting: asks.withLock { $0.waitingCount },
            heldForHandoff: handoff.heldCount, heldNow: handoff.heldNow, handoffTimeouts: handoff.timeouts,
            parkedForNewerMembers: counters.parked.load(ordering: .relaxed),
            handoffs: counters.handoffs.load(ordering: .relaxed), handoffDurations: counters.handoffDurations.histogram,
            isSettled: handoff.isSettled)
    }

    /// Takes this node out of the kind's members, handing its identities off first: tells the
    /// other members it is leaving (they stop placing identities here at once, and wait for this
    /// node before starting what it held), passivates its activations, which finish the
    /// messages they have, confirms to the others once they have all stopped, and checks its
    /// host out of the receptionist. Items that reach this node later are sent on to their new
    /// owners. Returns when the handoff is done, or after `timeout` (then logged, and the others
    /// go on after their own ``handoffTimeout``). Idempotent.
    public func leave(timeout: Duration = .seconds(10)) async {
        guard !hasLeft.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let others = placement.withLock { $0.view.confirmers }
        await withTaskGroup(of: Void.self) { group in
            for outbox in others.compactMap(\.outbox) {
                group.addTask { await self.announceLeaving(to: outbox) }
            }
        }
        applyView()
        // Done when the confirmations have reached the others, not only left here: once this
        // node is out of the listing, they stop waiting for it, and the items it forwarded
        // ahead of its confirmation must be there first.
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var handedOff = false
        while !handedOff, clock.now < deadline {
            // The confirmation's lines, not every line idle: this node's own senders may keep
            // a line busy, and what it forwarded before the confirmation is ahead of it.
            let generation = placement.withLock { $0.handoff.generation }
            let (confirmed, lines) = confirmations.withLock { $0 }
            handedOff = confirmed == generation && lines.allSatisfy { $0.0.hasHandedOver($0.1) }
            if !handedOff { try? await Task.sleep(for: .milliseconds(2)) }
        }
        if !handedOff {
            logger.warning(
                "leaving \(name): the handoff did not finish within \(timeout) (\(local.statistics.active) activations left); checking out anyway"
            )
        }
        cluster.receptionist.checkOut(host, from: key)
    }
}

extension ClusterEntityRegion {
    /// The kind's hosts as the receptionist last listed them.
    var listedHosts: [EntityHost] { placement.withLock { $0.hosts } }

    /// The fingerprint of the last marker `member`'s region sent here.
    func lastMarker(from member: UInt64) -> UInt64? { placement.withLock { $0.handoff.lastMarker(from: member) } }
}

/// A region's view and handoff, under one lock: a sender reads both at once. Not nested in
/// the generic region: the lock of a generic type looked the type's metadata up on every send
/// (the owner row of `troupe-bench --quick cluster-entities`: 263–274 ns nested).
struct Placement: Sendable {
    var view = PlacementView(members: [])
    /// The number of the latest view made (``PlacementView/number``).
    var viewsMade: UInt64 = 0
    var handoff = Handoff()
    /// The kind's hosts as the receptionist last listed them.
    var hosts: [EntityHost] = []
    /// The hosts of members that announced they are leaving (a region made again on that node
    /// is a new host).
    var leavers: Set<ClusterSystem.ActorID> = []
    /// The fingerprint this node has drained for (nothing of another owner runs here).
    var drained: UInt64?
    /// The owners' fingerprints this node has adopted, the latest last (a few: enough to tell a
    /// line that is behind this node from one that is ahead).
    var adopted: [UInt64] = []
    /// Lines (by sending member) whose last marker named owners this node has not adopted:
    /// what they send was routed by newer owners than this node's.
    var ahead: [UInt64: UInt64] = [:]
    /// What those lines sent since, in order, with the line: until this node adopts new owners,
    /// the line's marker names owners it has adopted, or the handoff timeout.
    var parked: [(line: UInt64, item: Handoff.Held)] = []
    /// Counts releases of `parked` (a timeout names the parking it was started for).
    var parkEpoch: UInt64 = 0
    /// The handoff in progress (one with other members to wait for): its generation, and when
    /// the change of members began it.
    var handoffStarted: (generation: UInt64, at: ContinuousClock.Instant)?

    /// Takes what `line` parked, in order; the other lines' items stay.
    mutating func releaseParked(from line: UInt64) -> [Handoff.Held] {
        var released: [Handoff.Held] = []
        parked.removeAll { entry in
            guard entry.line == line else { return false }
            released.append(entry.item)
            return true
        }
        // A parking that starts again has a timeout of its own.
        if parked.isEmpty, !released.isEmpty { parkEpoch += 1 }
        return released
    }

    /// The members (and leavers) whose confirmation of the current view has not come.
    var unconfirmed: [ClusterNode] { nodes(handoff.waitingFor) }

    /// What the handoff waits for, by node, for a log line.
    var handoffState: String {
        "owners \(String(view.fingerprint, radix: 16)) (generation \(handoff.generation)), \(view.members.count) members, "
            + "\(view.leaving.count) leaving; confirmations missing from \(nodes(handoff.waitingFor)); markers missing "
            + "from \(nodes(handoff.markersMissing)); drained here: \(drained == view.fingerprint); \(handoff.heldNow) "
            + "held, \(parked.count) parked, \(ahead.count) lines ahead"
    }

    private func nodes(_ uids: Set<UInt64>) -> [ClusterNode] {
        (view.members + view.leaving).map(\.node).filter { uids.contains($0.uid) }.sorted { $0.uid < $1.uid }
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
    func leaving(_ member: UInt64) { target?.leaving(member) }
    func load() -> NodeEntityLoad? { target?.load() }
}
