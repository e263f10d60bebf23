import Logging
import NIOCore
import Synchronization
import Troupe
import TroupeClusterMembership

/// A node's address, the key of its association (its uid is learnt at the handshake).
struct NodeAddress: Hashable, Sendable, CustomStringConvertible {
    let host: String
    let port: Int
    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
    init(_ node: ClusterNode) { self.init(host: node.host, port: node.port) }
    var description: String { "\(host):\(port)" }
}

/// Associations by address: one current association per peer, the dials in progress and their
/// waiters, and every association still open (handshaking or retired ones too).
struct AssociationTable {
    var current: [NodeAddress: Association] = [:]
    var dials: [NodeAddress: [CheckedContinuation<Association, any Error>]] = [:]
    var dialTargets: [ObjectIdentifier: NodeAddress] = [:]
    /// Set (under the lock) by `shutdown()` when it takes the table's waiters: a dial asked for
    /// after that fails at once instead of waiting on a table nobody will resume.
    var isClosed = false
}

extension ClusterSystem {
    /// The current association to `member`, dialling if there is none. Throws
    /// ``ClusterCallError/nodeDown(_:)`` if `member` is down or another run of a node now
    /// listens at its address, ``ClusterCallError/nodeUnreachable(_:reason:)`` if it cannot be
    /// reached. Any thread.
    func association(to member: ClusterNode) async throws(ClusterCallError) -> Association {
        if let association = currentAssociation(to: member) { return association }
        guard !shutDown else { throw .systemShutDown }
        guard !isDown(member) else { throw .nodeDown(member) }
        let association: Association
        do {
            association = try await self.association(toAddress: NodeAddress(member))
        } catch let error as ClusterCallError {
            throw error
        } catch let ClusterTransportError.connectionRefused(host, port) {
            throw .nodeUnreachable(member, reason: "connection to \(host):\(port) refused")
        } catch {
            throw .nodeUnreachable(member, reason: "\(error)")
        }
        guard association.peer?.uid == member.uid else {
            // Another run of a node listens there now: the member itself is gone.
            tellMembership(.superseded(member))
            throw .nodeDown(member)
        }
        return association
    }

    /// The current association to whichever node listens at `address`, dialling if there is
    /// none. Throws the transport's error if the dial or the handshake fails.
    func association(toAddress address: NodeAddress) async throws -> Association {
        guard !shutDown else { throw ClusterCallError.systemShutDown }
        return try await withCheckedThrowingContinuation { continuation in
            let (ready, startDial, closed) = associations.withLock { table -> (Association?, Bool, Bool) in
                if table.isClosed { return (nil, false, true) }
                if let ready = table.current[address] { return (ready, false, false) }
                table.dials[address, default: []].append(continuation)
                return (nil, table.dials[address]!.count == 1, false)
            }
            if closed { return continuation.resume(throwing: ClusterCallError.systemShutDown) }
            if let ready { continuation.resume(returning: ready) }
            if startDial { Task { await self.dial(address) } }
        }
    }

    /// The current association if it is established with exactly `member`: one lock, no await.
    func currentAssociation(to member: ClusterNode) -> Association? {
        guard let association = associations.withLock({ $0.current[NodeAddress(member)] }),
            association.peer?.uid == member.uid
        else { return nil }
        return association
    }

    /// Whether `association` is the one this node uses for `peer` now (not one retired after
    /// both nodes dialled at once, nor one replaced since).
    func isCurrent(_ association: Association, for peer: ClusterNode) -> Bool {
        associations.withLock { $0.current[NodeAddress(peer)] === association }
    }

    /// Sends `envelope` to `member`, dialling first if needed; dropped (and logged at debug) if
    /// the member cannot be reached. For membership, receptionist and watch traffic, which
    /// tolerate loss.
    func send(_ envelope: WireEnvelope, to member: ClusterNode) {
        if let association = currentAssociation(to: member) { return association.send(envelope) }
        guard !shutDown else { return }
        Task {
            do {
                try await self.association(to: member).send(envelope)
            } catch {
                self.logger.debug("dropped \(envelope.kindName) to \(member): \(error)")
            }
        }
    }

    private func dial(_ address: NodeAddress) async {
        do {
            let ticket: ConnectionAdmission.Ticket
            switch admission.withLock({ $0.admitOutbound(host: address.host) }) {
            case .success(let admitted): ticket = admitted
            case .failure(let refusal):
                metrics.connectionsRefused.increment()
                return failDial(
                    address,
                    error: ClusterTransportError.unreachable(
                        host: address.host, port: address.port, reason: "not dialled: \(refusal)"))
            }
            let connection: any ClusterConnection
            do {
                connection = try await transport.connect(
                    host: address.host, port: address.port, maximumFrameSize: settings.limits.unauthenticatedFrameSize)
            } catch {
                admission.withLock { $0.closed(ticket, wasAuthenticated: false) }
                throw error
            }
            let association = Association(connection: connection, role: .initiator, system: self, admission: ticket)
            associations.withLock { $0.dialTargets[ObjectIdentifier(association)] = address }
            guard !shutDown else {
                connection.close()
                return failDial(address, error: ClusterCallError.systemShutDown)
            }
            association.start()
        } catch {
            if case ClusterTransportError.connectionRefused = error { tellMembership(.refused(address)) }
            failDial(address, error: error)
        }
    }

    private func failDial(_ address: NodeAddress, error: any Error) {
        let waiters = associations.withLock { $0.dials.removeValue(forKey: address) ?? [] }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// An inbound connection: admitted (``ConnectionAdmission``) or closed at once; the peer
    /// speaks first.
    func accept(_ connection: any ClusterConnection) {
        guard !shutDown else { return connection.close() }
        let host = connection.remoteHost ?? "unknown"
        switch admission.withLock({ $0.admitInbound(host: host, now: ContinuousClock.now) }) {
        case .success(let ticket):
            Association(connection: connection, role: .responder, system: self, admission: ticket).start()
        case .failure(let refusal):
            metrics.connectionsRefused.increment()
            warnAboutPeer(
                "closed a cluster connection over a limit", kind: "admission",
                metadata: ["peer": "\(PeerText(connection.peerDescription))", "limit": "\(refusal)"])
            connection.close()
        }
    }

    /// A warning about a misbehaving peer, at most one per kind per
    /// ``ClusterConnectionLimits/warningInterval`` (with the count of those not logged).
    func warnAboutPeer(_ message: Logger.Message, kind: String, metadata: Logger.Metadata) {
        let (log, suppressed) = warnings.withLock { $0.admit(kind, now: ContinuousClock.now) }
        guard log else { return }
        var metadata = metadata
        if suppressed > 0 { metadata["suppressed_since_last"] = "\(suppressed)" }
        logger.warning(message, metadata: metadata)
    }

    /// The handshake completed. If another association to the same node exists (both nodes
    /// dialled at once), both nodes keep the one initiated by the smaller node and retire the
    /// other, so that each pair of nodes ends up with one connection.
    func associationEstablished(_ association: Association, peer: ClusterNode) {
        let address = NodeAddress(peer)
        admission.withLock { $0.authenticated(association.admission) }
        let (waiters, current, retired) = associations.withLock { table in
            var retired: Association?
            table.dialTargets[ObjectIdentifier(association)] = nil
            if let existing = table.current[address], existing !== association {
                if existing.peer?.uid == peer.uid && keeps(existing, over: association) {
                    retired = association
                } else {
                    retired = existing
                    table.current[address] = association
                }
            } else {
                table.current[address] = association
            }
            return (table.dials.removeValue(forKey: address) ?? [], table.current[address]!, retired)
        }
        for waiter in waiters { waiter.resume(returning: current) }
        if let retired { retire(retired) }
        guard retired !== association else { return }
        logger.debug("associated with \(peer)", metadata: ["role": "\(association.role)"])
        metrics.associations.increment()
        tellMembership(.associated(peer))
        sendReceptionistSnapshot(to: association)
    }

    /// Whether `existing` wins over `incoming` between the same two nodes: the one whose
    /// initiator is the smaller node id.
    private func keeps(_ existing: Association, over incoming: Association) -> Bool {
        func initiator(_ association: Association) -> ClusterNode {
            association.role == .initiator ? node : association.peer!
        }
        return initiator(existing).orderingKey <= initiator(incoming).orderingKey
    }

    /// Stops using `association` for new frames and closes it after a grace period, so that
    /// replies already on their way over it still arrive.
    func retire(_ association: Association) {
        guard !association.retired.exchange(true, ordering: .acquiringAndReleasing) else { return }
        actorSystem.schedule(after: .seconds(2)) { _ in association.close() }
    }

    func associationClosed(_ association: Association, error: (any Error)?) {
        admission.withLock { $0.closed(association.admission, wasAuthenticated: association.isEstablished) }
        let (wasCurrent, dialAddress) = associations.withLock { table -> (Bool, NodeAddress?) in
            let dialAddress = table.dialTargets.removeValue(forKey: ObjectIdentifier(association))
            if let peer = association.peer, table.current[NodeAddress(peer)] === association {
                table.current[NodeAddress(peer)] = nil
                return (true, dialAddress)
            }
            return (false, dialAddress)
        }
        if let dialAddress, !association.isEstablished {
            failDial(
                dialAddress,
                error: ClusterTransportError.unreachable(
                    host: dialAddress.host, port: dialAddress.port,
                    reason: error.map { "\($0)" } ?? "the connection closed during the handshake"))
        }
        guard wasCurrent, let peer = association.peer else { return }
        logger.debug("connection to \(peer) closed", metadata: ["error": "\(error.map { "\($0)" } ?? "none")"])
        failCalls(where: { $0 == peer }, with: { _ in .nodeUnreachable(peer, reason: "the connection closed") })
        if !shutDown { tellMembership(.connectionLost(peer)) }
    }

    /// A handshake failed: counted, logged, and the connection closed.
    func handshakeFailed(_ association: Association, reason: String) {
        handshakeFailures.wrappingAdd(1, ordering: .relaxed)
        metrics.handshakeFailures.increment()
        warnAboutPeer(
            "refused a cluster connection", kind: "handshake",
            metadata: ["peer": "\(PeerText(association.connection.peerDescription))", "reason": "\(reason)"])
        association.close()
    }

    /// A frame that does not decode, or that has no place in the conversation: counted,
    /// logged, and the connection closed. Nothing it carried is used.
    func protocolViolation(_ association: Association, reason: String) {
        protocolViolations.wrappingAdd(1, ordering: .relaxed)
        metrics.protocolViolations.increment()
        warnAboutPeer(
            "closing a cluster connection after a protocol violation", kind: "violation",
            metadata: [
                "peer": "\(PeerText(association.peer.map { "\($0)" } ?? association.connection.peerDescription))",
                "reason": "\(reason)",
            ])
        association.close()
    }
}

extension ClusterNode {
    /// A total order on nodes, the same on every node.
    var orderingKey: String { "\(host):\(port):\(uid)" }
}
