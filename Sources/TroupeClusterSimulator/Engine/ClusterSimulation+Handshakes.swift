import TroupeCluster
import TroupeClusterMembership

/// The connections: every dial runs TroupeCluster's handshake state machine at both ends, its
/// envelopes over the simulated network; `ClusterSystem`'s part around it (one dial per
/// address at a time, joining the peer once associated, marking down a member whose address
/// another run answers, stopping when a proved "you are down" comes) is played here.
extension ClusterSimulation {
    /// Dials node `target`'s address from node `index` for `member` (nil: whoever listens
    /// there). Refused after a round trip if the process there is gone; unanswered if the
    /// machine is; else the connection is up a round trip later and the hello goes out.
    func connect(from index: Int, to target: Int, dialled member: ClusterNode?) {
        guard nodes[target].isRunning else {
            if nodes[target].isStopped, let member,
                let rtt = network.roundTrip(between: index, and: target, using: &generator)
            {
                queue.push(.refused(node: index, uid: nodes[index].node.uid, member: member), at: nowNanoseconds + rtt)
            }
            return
        }
        let pair = SimulatedConnection.pair(index, target)
        guard !dialsInFlight.contains(pair) else { return }
        // The connection's own round trip (a cut link: the dial times out).
        guard let rtt = network.roundTrip(between: index, and: target, using: &generator) else { return }
        let machine = HandshakeStateMachine(
            role: .initiator, myself: nodes[index].node, handshake: handshake, nonce: nonce())
        dialsInFlight.insert(pair)
        let number = open(
            SimulatedConnection(
                initiator: index, initiatorUID: nodes[index].node.uid, responder: target,
                responderUID: nodes[target].node.uid, dialled: member, initiatorEnd: machine, stranger: nil))
        if let hello = machine.start() { transmit(hello, on: number, toResponder: true, after: rtt) }
    }

    /// A stranger with the cluster's name but not its secret dials node `index`.
    func strangerDials(_ index: Int, _ tactic: StrangerTactic) {
        report.strangerConnections += 1
        let impostor: ClusterNode
        let others = nodes.indices.filter { $0 != index && nodes[$0].isRunning }
        if tactic != .wrongSecret, let other = others.randomElement(using: &generator) {
            // As a member, so that a handshake that let it in would credit the member.
            impostor = nodes[other].node
        } else {
            impostor = ClusterNode(host: "192.0.2.\(1 + generator.next() % 254)", port: 7_337, uid: generator.next())
        }
        let machine = HandshakeStateMachine(
            role: .initiator, myself: impostor,
            handshake: Handshake(secret: "not the cluster's secret", clusterName: handshake.clusterName),
            nonce: nonce())
        trace.record(nowNanoseconds, "a stranger dials node \(index) as \(nodeName(impostor)): \(tactic)")
        guard let rtt = network.roundTrip(between: SimulatedConnection.strangerIndex, and: index, using: &generator)
        else { return }
        let number = open(
            SimulatedConnection(
                initiator: SimulatedConnection.strangerIndex, initiatorUID: 0, responder: index,
                responderUID: nodes[index].node.uid, dialled: nil, initiatorEnd: machine, stranger: tactic))
        guard let hello = machine.start() else { return }
        transmit(hello, on: number, toResponder: true, after: rtt)
        if tactic == .gossipBeforeProof {
            let lie = SWIMMessage.Gossip(member: nodes[index].node, status: .down)
            transmit(.membership(.ping(sequence: 1, gossip: [lie])), on: number, toResponder: true, after: rtt)
        }
    }

    /// A handshake envelope at node `index`, one end of connection `number`.
    func handshakeReceived(_ envelope: WireEnvelope, on number: Int, at index: Int) {
        guard var connection = connections[number] else { return }
        let atResponder = index == connection.responder
        var end =
            atResponder
            ? connection.responderEnd
                ?? HandshakeStateMachine(
                    role: .responder, myself: nodes[index].node, handshake: handshake, nonce: nonce())
            : connection.initiatorEnd
        let view = nodes[index].machine
        let action = end.receive(envelope, isDown: { view.status(of: $0) == .down })
        if atResponder { connection.responderEnd = end } else { connection.initiatorEnd = end }
        connections[number] = connection
        let back = !atResponder
        switch action {
        case .send(let reply):
            transmit(reply, on: number, toResponder: back)
        case .establish(let peer, let then):
            if let then { transmit(then, on: number, toResponder: back) }
            established(connection, number: number, with: peer, at: index)
        case .refuse(let refusal, _):
            // The refusal is on its way: the other end reads it (a proved "you are down"
            // included) before the connection goes; this end's machine is closed.
            transmit(.refused(refusal), on: number, toResponder: back)
            failed(connection, number: number, at: index, closing: false)
        case .close:
            failed(connection, number: number, at: index)
        case .violation(let reason):
            report.protocolViolations += 1
            trace.record(nowNanoseconds, "node \(index) closes a connection: \(reason)")
            failed(connection, number: number, at: index)
        case .removedFromCluster(let by, _):
            failed(connection, number: number, at: index)
            if connection.isStrangers {
                violate(.strangerAdmitted, "a stranger's connection removed node \(index)")
            }
            removedByNotice(index, from: by)
        case .deliver, .ignore:
            break
        }
    }

    /// A stranger's end reads what the node sent it, and plays its tactic.
    func strangerReceives(_ envelope: WireEnvelope, on number: Int) {
        guard var connection = connections[number], let tactic = connection.stranger else { return }
        guard case .challenge(let challenge) = envelope else { return closeConnection(connection, number: number) }
        switch tactic {
        case .wrongSecret:
            // Its own machine finds that the node's proof does not check out under its secret.
            let action = connection.initiatorEnd.receive(envelope, isDown: { _ in false })
            connections[number] = connection
            switch action {
            case .refuse(let refusal, _): transmit(.refused(refusal), on: number, toResponder: true)
            case .establish:
                violate(.strangerAdmitted, "a proof under the cluster's secret checked out under another")
            default: break
            }
        case .forgedProof:
            transmit(.proof(WireEnvelope.Proof(proof: nonce())), on: number, toResponder: true)
        case .forgedDownNotice:
            let notice = WireEnvelope.DownNotice(
                from: connection.initiatorEnd.myself, responderNonce: challenge.nonce, proof: nonce())
            let refusal = WireEnvelope.Refusal(reason: "the cluster removed you", downNotice: notice)
            transmit(.refused(refusal), on: number, toResponder: true)
        case .gossipBeforeProof:
            break
        }
    }

    /// One end of `connection` completed its handshake with `peer`: as `ClusterSystem`, it is
    /// associated and tells its membership; a dial answered by another run of the node marks
    /// the member it was for down.
    private func established(_ connection: SimulatedConnection, number: Int, with peer: ClusterNode, at index: Int) {
        let now = localTime(of: index)
        nodes[index].peers.insert(peer.uid)
        if index == connection.responder {
            report.handshakesCompleted += 1
            connections[number] = nil
            if connection.isStrangers {
                violate(.strangerAdmitted, "node \(index) completed a stranger's handshake as \(nodeName(peer))")
                return
            }
        } else {
            dialsInFlight.remove(connection.pair)
            if let member = connection.dialled, member.uid != peer.uid {
                carryOut(nodes[index].machine.markDown(member, now: now), by: index)
            }
        }
        carryOut(nodes[index].machine.join([peer], now: now), by: index)
        // `ClusterSystem.associationEstablished`: this end's receptionist snapshot.
        if let other = indexByUID[peer.uid], nodes[other].node.uid == peer.uid { sendSnapshot(from: index, to: other) }
    }

    /// An end refused the handshake or was refused: counted, and the connection closed.
    private func failed(_ connection: SimulatedConnection, number: Int, at index: Int, closing: Bool = true) {
        report.handshakeFailures += 1
        if connection.isStrangers && index == connection.responder { report.strangersRefused += 1 }
        if closing {
            closeConnection(connection, number: number)
        } else if index == connection.initiator {
            dialsInFlight.remove(connection.pair)
        }
    }

    func closeConnection(_ connection: SimulatedConnection, number: Int) {
        connections[number] = nil
        dialsInFlight.remove(connection.pair)
    }

    /// A proved "you are down" came: the cluster removed node `index`, which stops (as
    /// TroupeCluster's `removedByCluster`); its other connections close.
    private func removedByNotice(_ index: Int, from member: ClusterNode) {
        guard nodes[index].isRunning else { return }
        trace.record(nowNanoseconds, "node \(index) learns from \(nodeName(member)) that it was removed; it stops")
        accountUptime(until: nowNanoseconds)
        nodes[index].state = .removed
        nodes[index].held = []
        report.removals += 1
        closeConnections(of: index)
        if let delay = settings.restartRemovedAfter {
            queue.push(.fault(.restart(node: index)), at: nowNanoseconds + delay.simulatedNanoseconds)
        }
    }

    // MARK: The wire

    private func open(_ connection: SimulatedConnection) -> Int {
        let number = nextConnection
        nextConnection += 1
        connections[number] = connection
        queue.push(
            .handshakeDeadline(connection: number), at: nowNanoseconds + settings.handshakeTimeout.simulatedNanoseconds)
        return number
    }

    /// Sends `envelope` along connection `number`, `after` from now, as TCP does: a lost
    /// segment comes late, after a retransmission; a cut link leaves the handshake to its
    /// deadline.
    private func transmit(_ envelope: WireEnvelope, on number: Int, toResponder: Bool, after delay: Int64 = 0) {
        guard var connection = connections[number] else { return }
        let (from, to, uid) =
            toResponder
            ? (connection.initiator, connection.responder, connection.responderUID)
            : (connection.responder, connection.initiator, connection.initiatorUID)
        let previous = toResponder ? connection.lastArrivalAtResponder : connection.lastArrivalAtInitiator
        guard
            let at = network.reliableArrival(
                from: from, to: to, now: nowNanoseconds + delay, after: previous, using: &generator)
        else {
            return
        }
        if toResponder { connection.lastArrivalAtResponder = at } else { connection.lastArrivalAtInitiator = at }
        connections[number] = connection
        queue.push(.handshake(node: to, uid: uid, connection: number, envelope: envelope), at: at)
    }

    /// A connection's nonce, drawn from the seed (32 bytes, as `Handshake.nonce()`).
    private func nonce() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(WireEnvelope.nonceLength)
        while bytes.count < WireEnvelope.nonceLength {
            let word = generator.next()
            for shift in stride(from: 0, to: 64, by: 8) where bytes.count < WireEnvelope.nonceLength {
                bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        return bytes
    }
}
