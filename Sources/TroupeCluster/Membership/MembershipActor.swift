import Troupe
import TroupeClusterMembership

/// Runs the node's ``SWIMStateMachine`` in a Troupe actor: the machine sees one message at a
/// time, time comes from the actor system's clock (virtual on a manual system), and its
/// directives are carried out through the cluster system (sends, events).
struct MembershipActor: ActorDefinition {
    enum Message: Sendable {
        /// The periodic tick (a tenth of the probe interval).
        case tick
        case swim(SWIMMessage, from: ClusterNode)
        /// A handshake completed with this member: join through it if it is new.
        case associated(ClusterNode)
        /// The current connection to this member closed: probe it now.
        case connectionLost(ClusterNode)
        /// Nothing listens at this address: the members there are unreachable.
        case refused(NodeAddress)
        /// Another run of a node listens at this member's address: the member is gone.
        case superseded(ClusterNode)
        /// The member said it leaves.
        case leaving(ClusterNode)
    }

    weak var cluster: ClusterSystem?
    var machine: SWIMStateMachine
    /// Frames counted on each association at the last tick (proof of life).
    var heardCounts: [ClusterNode: UInt64] = [:]
    var lastSeedDial: Duration?
    /// Members answered only through helpers, probe after probe: their connection is redialled.
    var directPaths: DirectPathWatch

    init(cluster: ClusterSystem) {
        self.cluster = cluster
        directPaths = DirectPathWatch(limit: cluster.settings.limits.reconnectAfterIndirectAnswers)
        machine = SWIMStateMachine(
            myself: cluster.node, settings: cluster.settings.membership, seed: cluster.node.uid)
    }

    func started(context: ActorContext<Message>) {
        let interval = (cluster?.settings.membership.probeInterval ?? .seconds(1)) / 10
        context.startPeriodicTimer(key: "tick", message: .tick, every: interval, initialDelay: .zero)
    }

    mutating func receive(_ message: Message, context: ActorContext<Message>) {
        guard let cluster, !cluster.shutDown else { return }
        let now = context.system.uptime
        var directives: [SWIMDirective] = []
        switch message {
        case .tick:
            for (member, count) in cluster.framesReceivedByPeer() where heardCounts[member] != count {
                heardCounts[member] = count
                directPaths.heardDirectly(member)
                directives += machine.heard(from: member, now: now)
            }
            directives += machine.tick(now: now)
            dialSeeds(cluster, now: now)
        case .swim(let swim, let sender):
            directives += machine.receive(swim, from: sender, now: now)
        case .associated(let member):
            directives += machine.join([member], now: now)
        case .connectionLost(let member):
            if case .alive? = machine.status(of: member) {
                // Redial at once: a refusal is conclusive (see `.refused`).
                cluster.send(.membership(.ping(sequence: 0, gossip: [])), to: member)
            }
        case .refused(let address):
            for (member, status) in machine.membership where NodeAddress(member) == address && status != .down {
                directives += machine.confirmUnreachable(member, now: now)
            }
        case .superseded(let member), .leaving(let member):
            directives += machine.markDown(member, now: now)
        }
        cluster.carryOut(directives)
        for member in directPaths.observe(directives) { cluster.reconnect(member) }
    }

    /// Until some other member is known, the seeds are dialled once a probe interval; after
    /// that, every ``seedRecontactPeriods`` probe intervals, the seeds at whose address no
    /// member is known: a group cut off by a partition whose members were removed and
    /// restarted forms a cluster of its own, which meets the other again this way (the
    /// handshake joins the two ends; anti-entropy gossip does the rest). The cluster simulator
    /// found such islands staying apart for good.
    private mutating func dialSeeds(_ cluster: ClusterSystem, now: Duration) {
        let known = machine.membership.filter { $0.value != .down }
        let interval = cluster.settings.membership.probeInterval * (known.isEmpty ? 1 : Self.seedRecontactPeriods)
        if let last = lastSeedDial, now - last < interval { return }
        lastSeedDial = now
        let knownAddresses = Set(known.keys.map(NodeAddress.init))
        cluster.dialSeeds(except: knownAddresses)
    }

    static let seedRecontactPeriods = 10
}

extension ClusterSystem {
    func tellMembership(_ message: MembershipActor.Message) {
        membershipRef.withLock { $0 }?.tell(message)
    }

    /// Frames received so far on each current association, by peer.
    func framesReceivedByPeer() -> [(ClusterNode, UInt64)] {
        associations.withLock { table in
            table.current.values.compactMap { association in
                association.peer.map { ($0, association.framesReceived.load(ordering: .relaxed)) }
            }
        }
    }

    /// Opens associations to the seeds (other than this node and those at `known` addresses);
    /// each completed handshake joins.
    func dialSeeds(except known: Set<NodeAddress> = []) {
        for seed in settings.seeds where !(seed.host == node.host && seed.port == node.port) {
            let address = NodeAddress(host: seed.host, port: seed.port)
            guard !known.contains(address) else { continue }
            let connected = associations.withLock { $0.current[address] != nil || $0.dials[address] != nil }
            guard !connected else { continue }
            Task {
                do {
                    _ = try await self.association(toAddress: address)
                } catch {
                    self.logger.debug("seed \(address) not reachable yet: \(error)")
                }
            }
        }
    }

    /// A member named in gossip that this node has no association with: dial it, so that it is
    /// admitted by its own handshake (``MembershipActor/Message/associated(_:)``) and never on
    /// another member's word. At most ``maximumDiscoveryDials`` at once: a member gossiping
    /// thousands of made-up names costs a few failed dials, each bounded by the connect timeout.
    /// A member held down here that another member has alive is dialled too: its handshake
    /// tells it, with a proved "you are down" (or tells this node, if the member holds it down).
    func dialDiscovered(_ member: ClusterNode) {
        guard !shutDown, currentAssociation(to: member) == nil else { return }
        let heldDown = isDown(member)
        guard discoveryDials.wrappingAdd(1, ordering: .relaxed).newValue <= Self.maximumDiscoveryDials else {
            discoveryDials.wrappingSubtract(1, ordering: .relaxed)
            return
        }
        Task {
            defer { self.discoveryDials.wrappingSubtract(1, ordering: .relaxed) }
            do {
                // `association(to:)` refuses to dial a member held down; the address is dialled
                // instead, and the handshake refuses the member once it proves who it is.
                if heldDown {
                    _ = try await self.association(toAddress: NodeAddress(member))
                } else {
                    _ = try await self.association(to: member)
                }
            } catch {
                self.logger.debug("could not dial \(PeerText(member.description)), named in gossip: \(error)")
            }
        }
    }

    static let maximumDiscoveryDials = 16

    /// Closes the connection to `member`, which answered the last probes only through other
    /// members (``ClusterConnectionLimits/reconnectAfterIndirectAnswers``): the next frame
    /// for it dials afresh (the membership pings it at once). Calls waiting on the old
    /// connection fail with ``ClusterCallError/nodeUnreachable(_:reason:)``; they were held
    /// behind whatever it could not deliver.
    func reconnect(_ member: ClusterNode) {
        guard !shutDown, let association = currentAssociation(to: member) else { return }
        reconnects.wrappingAdd(1, ordering: .relaxed)
        metrics.reconnects.increment()
        // Rate-limited like the other connection warnings: over a link cut for good (the member
        // reached through helpers only), this repeats every few probes of the member.
        warnAboutPeer(
            "a member answered probes in a row only through other members: closing the connection to it and dialling again",
            kind: "reconnect",
            metadata: ["member": "\(member)", "probes": "\(settings.limits.reconnectAfterIndirectAnswers)"])
        association.close()
    }

    /// Carries out the state machine's directives: sends, membership events (published, and
    /// acted on when a member goes down), and dials of members named in gossip.
    func carryOut(_ directives: [SWIMDirective]) {
        for directive in directives {
            switch directive {
            case .send(let message, let member):
                send(.membership(message), to: member)
            case .event(let event):
                publish(event)
            case .discovered(let member):
                dialDiscovered(member)
            case .measured(let roundTrip, let member):
                recordRoundTrip(roundTrip, to: member)
            case .measuredIndirectly(let roundTrip, let member, let helper):
                recordIndirectRoundTrip(roundTrip, to: member, via: helper)
            }
        }
    }

    /// Smooths a link's measured round trips as TCP does its SRTT (RFC 6298: 7/8 of the old
    /// value, 1/8 of the new one), so that one slow ack does not swing the figure.
    func recordRoundTrip(_ roundTrip: Duration, to member: ClusterNode) {
        memberTable.withLock { table in
            guard let status = table.statuses[member], status != .down else { return }
            table.roundTrips[member] = table.roundTrips[member].map { $0 * 7 / 8 + roundTrip / 8 } ?? roundTrip
            // Answered directly: the member is no longer reached only through a helper.
            table.indirectRoundTrips[member] = nil
        }
    }

    /// Keeps the latest probe of `member` that only `helper`'s relay answered (not smoothed:
    /// each goes through whichever helpers the probe picked).
    func recordIndirectRoundTrip(_ roundTrip: Duration, to member: ClusterNode, via helper: ClusterNode) {
        memberTable.withLock { table in
            guard let status = table.statuses[member], status != .down else { return }
            table.indirectRoundTrips[member] = IndirectRoundTrip(roundTrip: roundTrip, via: helper)
        }
    }
}
