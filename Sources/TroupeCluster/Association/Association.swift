import NIOCore
import Synchronization
import Troupe
import TroupeClusterMembership

/// One connection to another node: its handshake (``HandshakeStateMachine``, which decides),
/// then the delivery of the established association's envelopes to the cluster system.
///
/// Threads: the connection delivers frames one at a time (``ClusterConnection``'s contract), so
/// `machine` and `lastResolved` are only touched by that sequence (and by `start`, before the
/// connection delivers anything). The peer is also published for other threads: written once
/// to `establishedPeer` before `established` is stored with release ordering, read only after
/// an acquiring load of it (``peer``). ``send(_:)`` may be called from any thread.
final class Association: ClusterConnectionHandler, @unchecked Sendable {  // see the threading note above
    typealias Role = HandshakeStateMachine.Role

    let connection: any ClusterConnection
    let system: ClusterSystem
    /// `@exclusivity(unchecked)`: touched only by the delivery sequence (one frame at a time),
    /// so the run-time exclusivity check (~80 instructions per access, one per frame) proves
    /// nothing here.
    @exclusivity(unchecked) private var machine: HandshakeStateMachine
    /// The machine's peer while it is `established` (the delivery sequence's fast path); the
    /// same confinement as `machine`.
    @exclusivity(unchecked) private var deliveryPeer: ClusterNode?
    private var establishedPeer: ClusterNode?
    private let established = Atomic<Bool>(false)
    /// Frames received, read by the membership actor as proof of life. Relaxed: a count.
    let framesReceived = Atomic<UInt64>(0)
    /// Remote calls this node sent over it, and invocations it received (for the snapshot
    /// section's calls per member). Relaxed: counts.
    let callsSent = Atomic<UInt64>(0)
    let callsReceived = Atomic<UInt64>(0)
    /// Set once the cluster stops using this association for new frames (it lost a tie-break
    /// to a simultaneous connection, or its peer is down); it closes a little later.
    let retired = Atomic<Bool>(false)
    /// Where the connection comes from, as admission control counts it (``ConnectionAdmission``).
    let admission: ConnectionAdmission.Ticket
    private var handshakeDeadline: ScheduledAction?
    /// The target of the last call received, and what it resolved to: calls in a row to the
    /// same method (the common case) compare the name instead of locking the table and hashing
    /// it. Touched only in the delivery sequence.
    private var lastResolved: (name: String, target: ResolvedTarget)?
    private let allocator = ByteBufferAllocator()

    init(connection: any ClusterConnection, role: Role, system: ClusterSystem, admission: ConnectionAdmission.Ticket) {
        self.connection = connection
        self.admission = admission
        self.system = system
        machine = HandshakeStateMachine(
            role: role, myself: system.node, handshake: system.handshake, nonce: Handshake.nonce())
    }

    var role: Role { machine.role }

    var isEstablished: Bool { established.load(ordering: .acquiring) }

    /// The peer, once the handshake completed (any thread).
    var peer: ClusterNode? { isEstablished ? establishedPeer : nil }

    /// Starts the connection and, as initiator, says hello. Call once.
    func start() {
        handshakeDeadline = system.actorSystem.schedule(after: system.settings.handshakeTimeout) { [weak self] _ in
            guard let self, !self.isEstablished else { return }
            self.system.handshakeFailed(
                self, reason: "no complete handshake within \(self.system.settings.handshakeTimeout)")
        }
        let hello = machine.start()
        connection.start(self)
        if let hello { send(hello) }
    }

    func send(_ envelope: WireEnvelope) { send(envelope, frameCapacity: envelope.frameCapacity) }

    /// `send(_:)` with the frame's size already known (a call computes it to check the limit).
    func send(_ envelope: WireEnvelope, frameCapacity: Int) {
        var buffer = allocator.buffer(capacity: frameCapacity)
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
            machine.close()
            deliveryPeer = nil
            return system.protocolViolation(self, reason: "\(error)")
        }
        // The established association's envelopes (every call and reply) skip the machine's
        // action: `deliveryPeer` is set exactly when the machine is `established`, and the
        // machine's rule there is "handshake envelopes are violations, the rest are delivered".
        if let peer = deliveryPeer, !envelope.isHandshake { return system.handle(envelope, from: self, peer: peer) }
        let system = self.system
        switch machine.receive(envelope, isDown: { system.isDown($0) }) {
        case .deliver(let envelope, let peer):
            system.handle(envelope, from: self, peer: peer)
        case .send(let reply):
            send(reply)
        case .establish(let peer, let then):
            if let then { send(then) }
            establish(with: peer)
        case .refuse(let refusal, let reason):
            send(.refused(refusal))
            system.handshakeFailed(self, reason: reason)
        case .close(let reason):
            system.handshakeFailed(self, reason: reason)
        case .violation(let reason):
            deliveryPeer = nil
            system.protocolViolation(self, reason: reason)
        case .removedFromCluster(let by, let reason):
            system.handshakeFailed(self, reason: "\(by) says the cluster removed this node: \(reason)")
            system.removedByCluster(reason: "\(by) says: \(reason)")
        case .ignore:
            break
        }
    }

    func closed(_ connection: any ClusterConnection, error: (any Error)?) {
        // The transport's frame decoder refused a frame (oversized, too short, or left
        // incomplete) and closed the connection.
        if let error = error as? WireError { system.protocolViolation(self, reason: "\(error)") }
        machine.close()
        deliveryPeer = nil
        handshakeDeadline?.cancel()
        system.associationClosed(self, error: error)
    }

    private func establish(with peer: ClusterNode) {
        establishedPeer = peer
        deliveryPeer = peer
        established.store(true, ordering: .releasing)
        handshakeDeadline?.cancel()
        connection.peerAuthenticated(
            maximumFrameSize: system.settings.maximumFrameSize,
            incompleteFrameTimeout: system.settings.limits.incompleteFrameTimeout)
        system.associationEstablished(self, peer: peer)
    }
}

extension WireEnvelope {
    /// Whether this is one of the handshake's envelopes (hello, challenge, proof, refused).
    var isHandshake: Bool {
        switch self {
        case .hello, .challenge, .proof, .refused: true
        default: false
        }
    }

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
