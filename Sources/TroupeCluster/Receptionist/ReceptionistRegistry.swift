import TroupeClusterMembership

/// The receptionist's registrations as a pure state machine: this node's check-ins and each
/// other node's, as their updates said. No I/O and no locks: it returns what to broadcast and
/// which keys' listings changed, and `ClusterSystem` sends and notifies (under its table's
/// lock, so that updates leave in the order they were made). Package access:
/// `TroupeClusterSimulator` runs it on every simulated node.
///
/// The protocol: a node sends its whole ``snapshot()`` when an association comes up (the peer
/// replaces what it had of the node), then each check-in and check-out as it happens, over the
/// same connection, so the peer applies them in order. A member that goes down loses its
/// entries (``removeEntries(of:)``), and an update from a member held down is not applied (the
/// caller checks; this state does not know the membership).
package struct ReceptionistRegistry: Sendable {
    package typealias Update = WireEnvelope.ReceptionistUpdate

    /// This node's check-ins: actor numbers by key.
    package private(set) var local: [String: Set<UInt64>] = [:]
    /// Each other node's, as its updates said.
    package private(set) var remote: [ClusterNode: [String: Set<UInt64>]] = [:]

    package init() {}

    /// Lists this node's actor `number` under `key`: the update to broadcast, or nil when it
    /// was listed already.
    package mutating func checkIn(_ number: UInt64, key: String) -> Update? {
        guard local[key, default: []].insert(number).inserted else { return nil }
        return Update(operation: .checkIn, entries: [Update.Entry(key: key, actorNumber: number)])
    }

    /// Takes this node's actor `number` out of `key`'s listing: the update to broadcast, or nil
    /// when it was not listed.
    package mutating func checkOut(_ number: UInt64, key: String) -> Update? {
        guard local[key]?.remove(number) != nil else { return nil }
        return Update(operation: .checkOut, entries: [Update.Entry(key: key, actorNumber: number)])
    }

    /// This node's actor `number` is gone: takes it out of every listing. The update to
    /// broadcast and the keys it was under; nil when it was under none.
    package mutating func checkOutEverywhere(_ number: UInt64) -> (update: Update, keys: [String])? {
        let keys = local.filter { $0.value.contains(number) }.map(\.key)
        guard !keys.isEmpty else { return nil }
        for key in keys { local[key]?.remove(number) }
        return (Update(operation: .checkOut, entries: keys.map { Update.Entry(key: $0, actorNumber: number) }), keys)
    }

    /// Every check-in of this node, for a new association.
    package func snapshot() -> Update {
        Update(
            operation: .snapshot,
            entries: local.flatMap { key, numbers in numbers.map { Update.Entry(key: key, actorNumber: $0) } })
    }

    /// Applies `peer`'s update; returns the keys whose listing it touched.
    package mutating func apply(_ update: Update, from peer: ClusterNode) -> Set<String> {
        var touched = Set(update.entries.map(\.key))
        switch update.operation {
        case .snapshot:
            if let previous = remote[peer] { touched.formUnion(previous.keys) }
            var keys: [String: Set<UInt64>] = [:]
            for entry in update.entries { keys[entry.key, default: []].insert(entry.actorNumber) }
            remote[peer] = keys
        case .checkIn:
            for entry in update.entries { remote[peer, default: [:]][entry.key, default: []].insert(entry.actorNumber) }
        case .checkOut:
            for entry in update.entries { remote[peer]?[entry.key]?.remove(entry.actorNumber) }
        }
        return touched
    }

    /// `member` went down: its entries go. Returns the keys it had.
    package mutating func removeEntries(of member: ClusterNode) -> [String] {
        guard let keys = remote.removeValue(forKey: member) else { return [] }
        return Array(keys.keys)
    }

    /// `member`'s listed actors by key, without empty keys (as compared across nodes).
    package func entries(of member: ClusterNode) -> [String: Set<UInt64>] {
        (remote[member] ?? [:]).filter { !$0.value.isEmpty }
    }

    /// This node's own, without empty keys.
    package var localEntries: [String: Set<UInt64>] { local.filter { !$0.value.isEmpty } }

    /// The actors listed under `key`, this node's (`node`) first, then each other node's in
    /// the cluster-wide order of nodes.
    func ids(for key: String, node: ClusterNode) -> [ClusterActorID] {
        var ids = (local[key] ?? []).sorted().map { ClusterActorID(node: node, number: $0) }
        for (member, keys) in remote.sorted(by: { $0.key.orderingKey < $1.key.orderingKey }) {
            ids += (keys[key] ?? []).sorted().map { ClusterActorID(node: member, number: $0) }
        }
        return ids
    }
}
