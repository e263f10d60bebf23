import TroupeClusterMembership

/// One connection's handshake as a pure state machine: it is fed the connection's envelopes in
/// order and returns what to do (``Action``); ``Association`` carries the actions out. No I/O,
/// no clock, no locks, so every state can be tested frame by frame.
///
/// The rule it enforces: **nothing a peer says before it has proved the cluster secret changes
/// anything but this connection.** Before the proof only handshake envelopes are accepted; any
/// other is a protocol violation. A refusal received before the proof closes the connection and
/// nothing else; a refusal that says "you are down" is honoured only with a ``WireEnvelope/DownNotice``
/// whose HMAC covers this connection's two nonces. Once established, the state holds the peer.
///
/// Initiator: `awaitingChallenge` → (challenge proved) send proof → `established`.
/// Responder: `awaitingHello` → send challenge → `awaitingProof` → (proof checked) → `established`.
/// Any failure: → `closed`, for good.
///
/// Package access: `TroupeClusterSimulator` runs this machine on every simulated connection.
package struct HandshakeStateMachine: Sendable {
    package enum Role: Sendable { case initiator, responder }

    package enum State: Sendable, Equatable {
        /// Initiator: hello sent with ``myNonce``.
        case awaitingChallenge
        /// Responder: nothing received yet.
        case awaitingHello
        /// Responder: challenge sent to `peer`, whose hello carried `initiatorNonce`.
        case awaitingProof(peer: ClusterNode, initiatorNonce: [UInt8])
        /// Both sides proved the secret.
        case established(peer: ClusterNode)
        case closed
    }

    /// What the association does with one envelope.
    package enum Action: Sendable, Equatable {
        /// Send this handshake envelope.
        case send(WireEnvelope)
        /// The peer proved the secret: send `then` if there is one (the initiator's proof), then
        /// use the connection.
        case establish(peer: ClusterNode, then: WireEnvelope?)
        /// An envelope of the established association, from `peer`.
        case deliver(WireEnvelope, from: ClusterNode)
        /// Send this refusal, close, and count a failed handshake. `reason` is for this node's log.
        case refuse(WireEnvelope.Refusal, reason: String)
        /// Close and count a failed handshake (the peer refused us, or failed to prove itself).
        case close(reason: String)
        /// Close and count a protocol violation (an envelope with no place here).
        case violation(reason: String)
        /// A proved "you are down" from `by`: the cluster removed this node.
        case removedFromCluster(by: ClusterNode, reason: String)
        /// Nothing (the connection is already closed).
        case ignore
    }

    package let role: Role
    package let myself: ClusterNode
    /// This side's nonce for this connection: the hello's (initiator) or the challenge's
    /// (responder).
    package let myNonce: [UInt8]
    private let handshake: Handshake
    package private(set) var state: State

    package init(role: Role, myself: ClusterNode, handshake: Handshake, nonce: [UInt8]) {
        self.role = role
        self.myself = myself
        self.handshake = handshake
        myNonce = nonce
        state = role == .initiator ? .awaitingChallenge : .awaitingHello
    }

    /// The peer once established, else nil.
    package var peer: ClusterNode? {
        if case .established(let peer) = state { peer } else { nil }
    }

    /// What to send first: the initiator's hello; the responder waits.
    package func start() -> WireEnvelope? {
        guard role == .initiator, state == .awaitingChallenge else { return nil }
        return .hello(WireEnvelope.Hello(clusterName: handshake.clusterName, from: myself, nonce: myNonce))
    }

    /// The next envelope of the connection. `isDown` says whether this node holds a member down.
    ///
    package mutating func receive(_ envelope: WireEnvelope, isDown: (ClusterNode) -> Bool) -> Action {
        if case .established(let peer) = state {
            guard !envelope.isHandshake else {
                state = .closed
                return .violation(reason: "\(envelope.kindName) after the handshake")
            }
            return .deliver(envelope, from: peer)
        }
        return receiveBeforeEstablished(envelope, isDown: isDown)
    }

    /// ``receive(_:isDown:)`` in every state but `established`.
    private mutating func receiveBeforeEstablished(_ envelope: WireEnvelope, isDown: (ClusterNode) -> Bool) -> Action {
        switch state {
        case .established:
            preconditionFailure("handled by receive(_:isDown:)")
        case .awaitingHello:
            return receiveHello(envelope, isDown: isDown)
        case .awaitingChallenge:
            return receiveChallenge(envelope, isDown: isDown)
        case .awaitingProof(let peer, let initiatorNonce):
            return receiveProof(envelope, peer: peer, initiatorNonce: initiatorNonce)
        case .closed:
            return .ignore
        }
    }

    /// The connection closed or timed out: nothing more is accepted.
    package mutating func close() { state = .closed }

    // MARK: Responder

    private mutating func receiveHello(_ envelope: WireEnvelope, isDown: (ClusterNode) -> Bool) -> Action {
        guard case .hello(let hello) = envelope else { return unexpected(envelope, expected: "hello") }
        guard hello.clusterName == handshake.clusterName else {
            return refuse(
                "the cluster name does not match",
                log: "cluster name \"\(PeerText(hello.clusterName))\" is not this node's")
        }
        guard hello.from != myself else { return refuse("a node cannot connect to itself") }
        if isDown(hello.from) {
            // Proved with this side's nonce, which the initiator has not seen yet.
            let notice = downNotice(
                down: hello.from, initiator: hello.from, responder: myself, initiatorNonce: hello.nonce)
            return refuse(
                "\(PeerText(hello.from.description)) was marked down; restart it to rejoin as a new node",
                notice: notice, log: "\(PeerText(hello.from.description)) was marked down")
        }
        let proof = handshake.responderProof(
            initiator: hello.from, responder: myself, initiatorNonce: hello.nonce, responderNonce: myNonce)
        state = .awaitingProof(peer: hello.from, initiatorNonce: hello.nonce)
        return .send(.challenge(WireEnvelope.Challenge(from: myself, nonce: myNonce, proof: proof)))
    }

    private mutating func receiveProof(_ envelope: WireEnvelope, peer: ClusterNode, initiatorNonce: [UInt8]) -> Action {
        if case .refused(let refusal) = envelope {
            return refused(refusal, initiator: peer, responder: myself, initiatorNonce: initiatorNonce)
        }
        guard case .proof(let proof) = envelope else { return unexpected(envelope, expected: "proof") }
        let expected = handshake.initiatorProof(
            initiator: peer, responder: myself, initiatorNonce: initiatorNonce, responderNonce: myNonce)
        guard handshake.verify(proof.proof, equals: expected) else {
            return refuse("the peer did not prove it knows the cluster secret")
        }
        state = .established(peer: peer)
        return .establish(peer: peer, then: nil)
    }

    // MARK: Initiator

    private mutating func receiveChallenge(_ envelope: WireEnvelope, isDown: (ClusterNode) -> Bool) -> Action {
        if case .refused(let refusal) = envelope {
            // The responder is not known yet: a proved notice names it, and the proof covers it.
            let responder = refusal.downNotice?.from ?? myself
            return refused(refusal, initiator: myself, responder: responder, initiatorNonce: myNonce)
        }
        guard case .challenge(let challenge) = envelope else { return unexpected(envelope, expected: "challenge") }
        let expected = handshake.responderProof(
            initiator: myself, responder: challenge.from, initiatorNonce: myNonce, responderNonce: challenge.nonce)
        guard handshake.verify(challenge.proof, equals: expected) else {
            return refuse("the peer did not prove it knows the cluster secret")
        }
        guard challenge.from != myself else { return refuse("connected to itself") }
        if isDown(challenge.from) {
            let notice = WireEnvelope.DownNotice(
                from: myself, responderNonce: challenge.nonce,
                proof: handshake.downProof(
                    down: challenge.from, initiator: myself, responder: challenge.from, initiatorNonce: myNonce,
                    responderNonce: challenge.nonce))
            return refuse(
                "\(PeerText(challenge.from.description)) was marked down; restart it to rejoin as a new node",
                notice: notice, log: "\(PeerText(challenge.from.description)) was marked down")
        }
        let proof = handshake.initiatorProof(
            initiator: myself, responder: challenge.from, initiatorNonce: myNonce, responderNonce: challenge.nonce)
        state = .established(peer: challenge.from)
        return .establish(peer: challenge.from, then: .proof(WireEnvelope.Proof(proof: proof)))
    }

    // MARK: Refusals

    /// A refusal from the peer. Its reason is the peer's text (sanitised for the log); a down
    /// notice counts only if its proof checks out for this connection.
    private mutating func refused(
        _ refusal: WireEnvelope.Refusal, initiator: ClusterNode, responder: ClusterNode, initiatorNonce: [UInt8]
    ) -> Action {
        state = .closed
        let reason = PeerText(refusal.reason)
        guard let notice = refusal.downNotice else { return .close(reason: "refused by the peer: \(reason)") }
        let responderNonce = role == .initiator ? notice.responderNonce : myNonce
        let sayer = role == .initiator ? responder : initiator
        let expected = handshake.downProof(
            down: myself, initiator: initiator, responder: responder, initiatorNonce: initiatorNonce,
            responderNonce: responderNonce)
        guard notice.from == sayer, notice.from != myself, notice.responderNonce == responderNonce,
            handshake.verify(notice.proof, equals: expected)
        else {
            return .violation(reason: "an unproved \"you are down\" (ignored); the peer's reason: \(reason)")
        }
        return .removedFromCluster(by: notice.from, reason: "\(reason)")
    }

    private func downNotice(
        down: ClusterNode, initiator: ClusterNode, responder: ClusterNode, initiatorNonce: [UInt8]
    ) -> WireEnvelope.DownNotice {
        WireEnvelope.DownNotice(
            from: myself, responderNonce: myNonce,
            proof: handshake.downProof(
                down: down, initiator: initiator, responder: responder, initiatorNonce: initiatorNonce,
                responderNonce: myNonce))
    }

    private mutating func refuse(
        _ reason: String, notice: WireEnvelope.DownNotice? = nil, log: String? = nil
    ) -> Action {
        state = .closed
        return .refuse(WireEnvelope.Refusal(reason: reason, downNotice: notice), reason: log ?? reason)
    }

    private mutating func unexpected(_ envelope: WireEnvelope, expected: String) -> Action {
        state = .closed
        return .violation(reason: "expected \(expected) before the handshake completed, got \(envelope.kindName)")
    }
}
