import Distributed
import Synchronization
import TroupeClusterMembership

/// Listings of distributed actors by ``ReceptionKey``, across the cluster. Each node announces
/// its own check-ins to every node it is associated with (a full snapshot when an association
/// comes up, then each change); a node's entries disappear when it goes down or its actor
/// deinitialises. Listings are eventually consistent: a check-in on one node reaches another
/// within a round trip.
///
/// Get it from ``ClusterSystem/receptionist``. Any thread.
public struct ClusterReceptionist: Sendable {
    let system: ClusterSystem

    /// Lists `actor` under `key` on every node. `actor` must be one of this node's own actors
    /// (``ReceptionistError/notLocal(_:)`` otherwise). Checking in twice is harmless. The entry
    /// goes when the actor deinitialises, on ``checkOut(_:from:)``, or when this node leaves.
    public func checkIn<Act>(_ actor: Act, with key: ReceptionKey<Act>) throws(ReceptionistError) {
        guard actor.id.node == system.node else { throw .notLocal(actor.id) }
        system.receptionistTable.withLock { table in
            guard let update = table.registry.checkIn(actor.id.number, key: key.wireKey) else { return }
            table.notify(key.wireKey, node: system.node)
            // Sent under the lock: see `sendReceptionistSnapshot(to:)`.
            system.broadcast(.receptionist(update))
        }
        system.deliverListings()
    }

    /// Removes `actor` from `key`'s listing everywhere.
    public func checkOut<Act>(_ actor: Act, from key: ReceptionKey<Act>) {
        guard actor.id.node == system.node else { return }
        system.receptionistTable.withLock { table in
            guard let update = table.registry.checkOut(actor.id.number, key: key.wireKey) else { return }
            table.notify(key.wireKey, node: system.node)
            // Sent under the lock: see `sendReceptionistSnapshot(to:)`.
            system.broadcast(.receptionist(update))
        }
        system.deliverListings()
    }

    /// The actors listed under `key` now, on every node this node knows of (its own first).
    public func lookup<Act>(_ key: ReceptionKey<Act>) -> [Act] {
        let ids = system.receptionistTable.withLock { $0.ids(for: key.wireKey, node: system.node) }
        return ids.compactMap { try? Act.resolve(id: $0, using: system) }
    }

    /// The listing under `key` now, then again after every change (a check-in or out anywhere,
    /// a node going down). Ends when the cluster shuts down.
    public func listing<Act>(of key: ReceptionKey<Act>) -> AsyncStream<[Act]> {
        let (stream, continuation) = AsyncStream<[Act]>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let system = self.system
        let id = system.receptionistTable.withLock { table -> UInt64? in
            guard !table.finished else { return nil }
            table.nextSubscriber += 1
            let deliver: @Sendable ([ClusterActorID]) -> Void = { ids in
                continuation.yield(ids.compactMap { try? Act.resolve(id: $0, using: system) })
            }
            let subscriber = ReceptionistSubscriber(deliver: deliver, finish: { continuation.finish() })
            table.subscribers[key.wireKey, default: [:]][table.nextSubscriber] = subscriber
            table.undelivered.append((subscriber, table.ids(for: key.wireKey, node: system.node)))
            return table.nextSubscriber
        }
        system.deliverListings()
        guard let id else {
            continuation.finish()
            return stream
        }
        // Not under the table's lock here: a cancelled consumer's task runs this while holding
        // its own status lock, and `notify` yields (which takes that task's status lock) while
        // holding the table's lock: the two orders deadlocked (seen under TSan, a listing
        // cancelled while a node went down). A yield to the finished stream meanwhile is dropped.
        continuation.onTermination = { [weak system] _ in
            Task { _ = system?.receptionistTable.withLock { $0.subscribers[key.wireKey]?.removeValue(forKey: id) } }
        }
        return stream
    }
}

struct ReceptionistSubscriber: Sendable {
    let deliver: @Sendable ([ClusterActorID]) -> Void
    let finish: @Sendable () -> Void
}

/// The receptionist's state: the registrations (``ReceptionistRegistry``) and the subscribers.
struct ReceptionistTable {
    var registry = ReceptionistRegistry()
    var subscribers: [String: [UInt64: ReceptionistSubscriber]] = [:]
    var nextSubscriber: UInt64 = 0
    var finished = false
    /// Listings made under the lock, in the order of the changes, for ``ClusterSystem/deliverListings()``
    /// to hand out after it: never under the lock, because a stream that drops its oldest
    /// buffered listing releases the actors in it, and an actor's deinit checks out, which
    /// takes this lock (seen: a node going down, the dropped listing's last reference to a
    /// region's host).
    var undelivered: [(ReceptionistSubscriber, [ClusterActorID])] = []
    /// Whether a thread is handing `undelivered` out: the others only queue, so that every
    /// subscriber sees the listings in the order of the changes.
    var delivering = false

    func ids(for key: String, node: ClusterNode) -> [ClusterActorID] { registry.ids(for: key, node: node) }

    /// Queues `key`'s listing now for its subscribers (handed out by ``ClusterSystem/deliverListings()``).
    mutating func notify(_ key: String, node: ClusterNode) {
        guard let subscribers = subscribers[key], !subscribers.isEmpty else { return }
        let current = ids(for: key, node: node)
        for subscriber in subscribers.values { undelivered.append((subscriber, current)) }
    }
}

extension ClusterSystem {
    /// The cluster-wide registry of distributed actors by key.
    public var receptionist: ClusterReceptionist { ClusterReceptionist(system: self) }

    /// Sends `envelope` to every node with a current association.
    func broadcast(_ envelope: WireEnvelope) {
        let peers = associations.withLock { table in
            table.current.values.filter { !$0.retired.load(ordering: .relaxed) }
        }
        for association in peers { association.send(envelope) }
    }

    /// Sends this node's check-ins to a new association. Under the table's lock, as every
    /// check-in's and check-out's broadcast is: the peer applies them in the order they were
    /// made. Made and sent apart, a snapshot taken before a check-in could be sent after the
    /// check-in's broadcast, and the peer, replacing this node's entries with the snapshot,
    /// lost the check-in for good (seen: a region made as two nodes associated never appeared
    /// in the other node's listing).
    func sendReceptionistSnapshot(to association: Association) {
        receptionistTable.withLock { table in association.send(.receptionist(table.registry.snapshot())) }
    }

    func applyReceptionistUpdate(_ update: WireEnvelope.ReceptionistUpdate, from peer: ClusterNode) {
        guard !isDown(peer) else { return }
        receptionistTable.withLock { table in
            for key in table.registry.apply(update, from: peer) { table.notify(key, node: node) }
        }
        deliverListings()
    }

    func removeReceptionistEntries(of member: ClusterNode) {
        receptionistTable.withLock { table in
            for key in table.registry.removeEntries(of: member) { table.notify(key, node: node) }
        }
        deliverListings()
    }

    /// A local actor deinitialised: its check-ins go.
    func checkOutEverywhere(_ number: UInt64) {
        receptionistTable.withLock { table in
            guard let (update, keys) = table.registry.checkOutEverywhere(number) else { return }
            for key in keys { table.notify(key, node: node) }
            // Sent under the lock: see `sendReceptionistSnapshot(to:)`.
            broadcast(.receptionist(update))
        }
        deliverListings()
    }

    /// Hands the queued listings to their subscribers, outside the table's lock, in the order
    /// they were queued. One thread at a time hands them out: a call while another thread (or
    /// this one, further up: a deinit a delivery caused) is at it returns at once, and that
    /// thread takes what was queued.
    func deliverListings() {
        var batch = receptionistTable.withLock { table -> [(ReceptionistSubscriber, [ClusterActorID])] in
            guard !table.delivering, !table.undelivered.isEmpty else { return [] }
            table.delivering = true
            defer { table.undelivered = [] }
            return table.undelivered
        }
        while !batch.isEmpty {
            for (subscriber, ids) in batch { subscriber.deliver(ids) }
            batch = receptionistTable.withLock { table in
                defer { table.undelivered = [] }
                if table.undelivered.isEmpty { table.delivering = false }
                return table.undelivered
            }
        }
    }

    func finishReceptionist() {
        let subscribers = receptionistTable.withLock { table in
            table.finished = true
            defer { table.subscribers = [:] }
            return table.subscribers.values.flatMap(\.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}
