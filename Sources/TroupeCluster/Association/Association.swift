import NIOCore
import Synchronization
import Troupe
import TroupeClusterMembership

/// One authenticated connection to another node: the handshake's state machine, then the
/// delivery of envelopes to the cluster system.
///
/// Threads: the connection delivers frames one at a time (``ClusterConnection``'s contract), so
/// `state` is only touched by that sequence (and by `init`, before the connection starts).
/// `peer` is written once, before `isEstablished` is published with release ordering; other
/// threads read it only after an acquiring load of `isEstablished`. ``send(_:)`` is any thread.
final class Association: ClusterConnectionHandler, @unchecked Sendable {  // see the threading note above
    enum Role: Sendable { case initiator, responder }

    private enum State {
        case awaitingHello
        case awaitingChallenge(nonce: [UInt8])
        case awaitingProof(peer: MemberID, initiatorNonce: [UInt8], responderNonce: [UInt8])
        case established
        case closed
    }

    let connection: any ClusterConnection
    let role: Role
    let system: ClusterSystem
    private var state: State
    private(set) var peer: MemberID?
    private let established = Atomic<Bool>(false)
    /// Frames received, read by the membership actor as proof of life. Relaxed: a count.
    let framesReceived = Atomic<UInt64>(0)
    /// Set once the cluster stops using this association for new frames (it lost a tie-break
    /// to a simultaneous connection, or its peer is down); it closes a little later.
    let retired = Atomic<Bool>(false)
    private var handshakeDeadline: ScheduledAction?
    /// The target of the last call received, and what it resolved to: calls in a row to the
    /// same method (the common case) compare the name instead of locking the table and hashing
    /// it. Touched only in the delivery sequence, as `state`.
    private var lastResolved: (name: String, target: ResolvedTarget)?
    private let allocator = ByteBufferAllocator()

    init(connection: any ClusterConnection, role: Role, system: ClusterSystem) {
        self.connection = connection
        self.role = role
        self.system = system
        switch role {
        case .initiator: state = .awaitingChallenge(nonce: Handshake.nonce())
        case .responder: state = .awaitingHello
        }
    }

    var isEstablished: Bool { established.load(ordering: .acquiring) }

    /// Starts the connection and, as initiator, says hello. Call once.
    func start() {
        handshakeDeadline = system.actorSystem.schedule(after: system.settings.handshakeTimeout) { [weak self] _ in
            guard let self, !self.isEstablished else { return }
            self.system.handshakeFailed(
                self, reason: "no complete handshake within \(self.system.settings.handshakeTimeout)")
        }
        connection.start(self)
        if role == .initiator, case .awaitingChallenge(let nonce) = state {
            send(.hello(WireEnvelope.Hello(clusterName: system.settings.clusterName, from: system.node, nonce: nonce)))
        }
    }

    func send(_ envelope: WireEnvelope) {
        var buffer = allocator.buffer(capacity: envelope.frameCapacity)
        envelope.writeFrame(into: &buffer)
        connection.send(buffer)
    }

    func close() { connection.close() }

    /// `table.lookup(name)`, remembered for the next call to the same name. Delivery sequence only.
    func lastTarget(named name: String, in table: DistributedTargetTable) -> DistributedTargetTable.Lookup {
        if let last = lastResolved, last.name == name { return .resolved(last.target) }
        let lookup = table.lookup(name)
        if case .resolved(let target) = lookup { lastResolved = (name, target) }
        return lookup
    }

    // MARK: ClusterConnectionHandler

    func received(_ frame: ByteBuffer, on connection: any ClusterConnection) {
        framesReceived.wrappingAdd(1, ordering: .relaxed)
        let envelope: WireEnvelope
        do {
            envelope = try WireEnvelope.decode(frame)
        } catch {
            system.protocolViolation(self, reason: "\(error)")
            state = .closed
            return
        }
        switch state {
        case .established:
            system.handle(envelope, from: self, peer: peer.unsafelyUnwrapped)
        case .awaitingHello:
            receiveHello(envelope)
        case .awaitingChallenge(let nonce):
            receiveChallenge(envelope, initiatorNonce: nonce)
        case .awaitingProof(let peer, let initiatorNonce, let responderNonce):
            receiveProof(envelope, peer: peer, initiatorNonce: initiatorNonce, responderNonce: responderNonce)
        case .closed:
            break
        }
    }

    func closed(_ connection: any ClusterConnection, error: (any Error)?) {
        // The transport's frame decoder refused a frame (oversized, or shorter than any
        // envelope) and closed the connection.
        if let error = error as? WireError { system.protocolViolation(self, reason: "\(error)") }
        state = .closed
        handshakeDeadline?.cancel()
        system.associationClosed(self, error: error)
    }

    // MARK: The handshake

    private func receiveHello(_ envelope: WireEnvelope) {
        guard case .hello(let hello) = envelope else { return refuse("expected hello, got \(envelope.kindName)") }
        guard hello.clusterName == system.settings.clusterName else {
            return refuse("cluster \"\(hello.clusterName)\" is not this node's \"\(system.settings.clusterName)\"")
        }
        guard hello.from != system.node else { return refuse("a node cannot connect to itself") }
        if system.isDown(hello.from) {
            return refuse("\(hello.from) was marked down; restart it to rejoin as a new node", youAreDown: true)
        }
        let nonce = Handshake.nonce()
        let proof = system.handshake.responderProof(
            initiator: hello.from, responder: system.node, initiatorNonce: hello.nonce, responderNonce: nonce)
        state = .awaitingProof(peer: hello.from, initiatorNonce: hello.nonce, responderNonce: nonce)
        send(.challenge(WireEnvelope.Challenge(from: system.node, nonce: nonce, proof: proof)))
    }

    private func receiveChallenge(_ envelope: WireEnvelope, initiatorNonce: [UInt8]) {
        if case .refused(let reason, let youAreDown) = envelope { return refusedByPeer(reason, youAreDown) }
        guard case .challenge(let challenge) = envelope else {
            return refuse("expected challenge, got \(envelope.kindName)")
        }
        let expected = system.handshake.responderProof(
            initiator: system.node, responder: challenge.from, initiatorNonce: initiatorNonce,
            responderNonce: challenge.nonce)
        guard system.handshake.verify(challenge.proof, equals: expected) else {
            return refuse("the peer did not prove it knows the cluster secret")
        }
        guard challenge.from != system.node else { return refuse("connected to itself") }
        let proof = system.handshake.initiatorProof(
            initiator: system.node, responder: challenge.from, initiatorNonce: initiatorNonce,
            responderNonce: challenge.nonce)
        send(.proof(WireEnvelope.Proof(proof: proof)))
        establish(with: challenge.from)
    }

    private func receiveProof(
        _ envelope: WireEnvelope, peer: MemberID, initiatorNonce: [UInt8], responderNonce: [UInt8]
    ) {
        if case .refused(let reason, let youAreDown) = envelope { return refusedByPeer(reason, youAreDown) }
        guard case .proof(let proof) = envelope else { return refuse("expected proof, got \(envelope.kindName)") }
        let expected = system.handshake.initiatorProof(
            initiator: peer, responder: system.node, initiatorNonce: initiatorNonce, responderNonce: responderNonce)
        guard system.handshake.verify(proof.proof, equals: expected) else {
            return refuse("the peer did not prove it knows the cluster secret")
        }
        establish(with: peer)
    }

    private func establish(with peer: MemberID) {
        self.peer = peer
        state = .established
        established.store(true, ordering: .releasing)
        handshakeDeadline?.cancel()
        system.associationEstablished(self, peer: peer)
    }

    /// Tells the peer why, closes, and counts the failure.
    private func refuse(_ reason: String, youAreDown: Bool = false) {
        state = .closed
        send(.refused(reason: reason, youAreDown: youAreDown))
        system.handshakeFailed(self, reason: reason)
    }

    private func refusedByPeer(_ reason: String, _ youAreDown: Bool) {
        state = .closed
        if youAreDown { system.removedByCluster(reason: reason) }
        system.handshakeFailed(self, reason: "refused by the peer: \(reason)")
    }
}

extension WireEnvelope {
    var kindName: String {
        switch self {
        case .hello: "hello"
        case .challenge: "challenge"
        case .proof: "proof"
        case .refused: "refused"
        case .invocation: "invocation"
        case .reply: "reply"
        case .membership: "membership"
        case .receptionist: "receptionist"
        case .watch: "watch"
        case .unwatch: "unwatch"
        case .terminated: "terminated"
        case .leaving: "leaving"
        }
    }
}
