import TroupeCluster
import TroupeClusterMembership

/// The receptionist: every node runs TroupeCluster's `ReceptionistRegistry`; its updates go
/// over the pair's association as `ClusterSystem` sends them (a snapshot when the association
/// comes up, then each check-in and check-out), in order and without loss as over TCP; a
/// member's listings go when it is marked down, and its updates are not applied while it is.
extension ClusterSimulation {
    /// The keys the simulated actors check in under.
    static let receptionKeys = ["inventory", "orders", "sessions"]

    /// Whether the settings give the receptionist a workload (else nothing of it runs, and no
    /// choice is drawn for it).
    var simulatesReceptionist: Bool { settings.registrationsPerNode > 0 || settings.registrationChurn != nil }

    /// A formed cluster's pairs have associated (each dialled the others as they joined): each
    /// node has every other's snapshot.
    func assumeAssociated() {
        let uids = nodes.map(\.node.uid)
        for index in nodes.indices { nodes[index].peers = Set(uids.filter { $0 != nodes[index].node.uid }) }
    }

    /// Node `index`'s run starts: it checks in its actors, and its churn begins. In a cluster
    /// formed before the run (`inFormedCluster`), the other nodes have its listings already.
    func startRegistrations(_ index: Int, inFormedCluster: Bool) {
        guard simulatesReceptionist else { return }
        for _ in 0..<settings.registrationsPerNode {
            // A run's peers hear of its check-ins in the snapshot of their association.
            _ = checkInAnother(index)
        }
        if inFormedCluster {
            let snapshot = nodes[index].receptionist.snapshot()
            for other in nodes.indices where other != index {
                _ = nodes[other].receptionist.apply(snapshot, from: nodes[index].node)
            }
        }
        scheduleChurn(index)
    }

    func scheduleChurn(_ index: Int) {
        guard let churn = settings.registrationChurn?.simulatedNanoseconds else { return }
        let after = Int64(Double(churn) * (0.5 + generator.nextUnit()))
        queue.push(.registrationChurn(node: index, uid: nodes[index].node.uid), at: nowNanoseconds + max(1, after))
    }

    /// One of node `index`'s actors checks out (if it has any) and another checks in.
    func churnRegistrations(_ index: Int) {
        let listed = nodes[index].receptionist.local
            .flatMap { key, numbers in numbers.map { (key: key, number: $0) } }
            .sorted { ($0.key, $0.number) < ($1.key, $1.number) }
        if !listed.isEmpty {
            let leaving = listed[Int(generator.next() % UInt64(listed.count))]
            if let update = nodes[index].receptionist.checkOut(leaving.number, key: leaving.key) {
                broadcast(update, from: index)
            }
        }
        if let update = checkInAnother(index) { broadcast(update, from: index) }
    }

    private func checkInAnother(_ index: Int) -> ReceptionistRegistry.Update? {
        let number = nodes[index].nextActorNumber
        nodes[index].nextActorNumber += 1
        let key = Self.receptionKeys[Int(generator.next() % UInt64(Self.receptionKeys.count))]
        return nodes[index].receptionist.checkIn(number, key: key)
    }

    /// To every running node `index` is associated with (`ClusterSystem.broadcast`).
    private func broadcast(_ update: ReceptionistRegistry.Update, from index: Int) {
        for peer in nodes.indices
        where peer != index && nodes[peer].isRunning && nodes[index].peers.contains(nodes[peer].node.uid) {
            transmit(update, from: index, to: peer)
        }
    }

    /// Node `index`'s snapshot to node `peer`, whose association with it has just come up.
    func sendSnapshot(from index: Int, to peer: Int) {
        guard simulatesReceptionist, nodes[index].isRunning, nodes[peer].isRunning else { return }
        transmit(nodes[index].receptionist.snapshot(), from: index, to: peer)
    }

    /// Over the pair's association. A cut link breaks it (its retransmissions time out): both
    /// ends drop it, and the next message between them associates again, with snapshots.
    private func transmit(_ update: ReceptionistRegistry.Update, from index: Int, to peer: Int) {
        report.receptionistUpdates += 1
        guard let at = network.reliableArrival(from: index, to: peer, now: nowNanoseconds, using: &generator) else {
            nodes[index].peers.remove(nodes[peer].node.uid)
            nodes[peer].peers.remove(nodes[index].node.uid)
            return
        }
        listingInFlightUntil[SimulatedConnection.pair(index, peer)] = at
        queue.push(
            .receptionist(node: peer, uid: nodes[peer].node.uid, from: nodes[index].node, update: update), at: at)
    }

    /// `ClusterSystem.applyReceptionistUpdate`: not from a member held down.
    func receptionistReceived(_ update: ReceptionistRegistry.Update, from sender: ClusterNode, at index: Int) {
        guard nodes[index].machine.status(of: sender) != .down else { return }
        _ = nodes[index].receptionist.apply(update, from: sender)
    }

    /// After the settling time: each running node lists, for every running member it has
    /// alive, exactly what the member has checked in (unless an update between them is still
    /// on its way), and nothing of a member it holds down.
    func checkListings() {
        guard simulatesReceptionist else { return }
        let running = nodes.indices.filter { nodes[$0].isRunning }
        for observer in running {
            let registry = nodes[observer].receptionist
            for other in running where other != observer {
                guard case .alive? = nodes[observer].machine.status(of: nodes[other].node) else { continue }
                if listingInFlightUntil[SimulatedConnection.pair(other, observer), default: 0] > nowNanoseconds {
                    continue
                }
                let listed = registry.entries(of: nodes[other].node)
                let own = nodes[other].receptionist.localEntries
                guard listed != own else { continue }
                violate(
                    .staleListing,
                    "node \(observer) lists \(Self.describe(listed)) for node \(other), which checked in \(Self.describe(own))"
                )
            }
            for member in registry.remote.keys.sorted(by: { $0.uid < $1.uid })
            where nodes[observer].machine.status(of: member) == .down {
                violate(.staleListing, "node \(observer) lists \(nodeName(member)), which it holds down")
            }
        }
    }

    private static func describe(_ entries: [String: Set<UInt64>]) -> String {
        let listed = entries.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.sorted())" }
        return listed.isEmpty ? "nothing" : listed.joined(separator: ", ")
    }
}
