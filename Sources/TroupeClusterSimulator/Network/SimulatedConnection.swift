import TroupeCluster
import TroupeClusterMembership

/// One simulated TCP connection while its handshake runs: TroupeCluster's own
/// `HandshakeStateMachine` at each end (hello, challenge, proof, or a refusal, with the real
/// HMAC proofs over the connection's nonces), its envelopes carried by the simulated network.
/// The dialling end is a node's run, or a stranger (``SimulatedFault/stranger(dials:_:)``).
struct SimulatedConnection {
    /// The index of a stranger's end: outside every partition's group, never a node's.
    static let strangerIndex = 1 << 30

    /// The dialling end: a node's index and run (or ``strangerIndex`` and 0).
    let initiator: Int
    let initiatorUID: UInt64
    /// The run that listened at the dialled address when the connection was made.
    let responder: Int
    let responderUID: UInt64
    /// The member the dial was for; nil for a seed dial, which takes whoever listens there.
    let dialled: ClusterNode?
    var initiatorEnd: HandshakeStateMachine
    /// Made when the hello arrives (the responder draws its nonce then).
    var responderEnd: HandshakeStateMachine?
    /// For a stranger's connection: what it tries once challenged.
    let stranger: StrangerTactic?
    /// When the latest envelope each way arrives: the connection keeps its own order.
    var lastArrivalAtResponder: Int64 = 0
    var lastArrivalAtInitiator: Int64 = 0

    var isStrangers: Bool { initiator == Self.strangerIndex }

    /// The directed pair of a dial: one dial at a time per pair, as TroupeCluster keeps one
    /// per address.
    var pair: UInt64 { Self.pair(initiator, responder) }

    static func pair(_ initiator: Int, _ responder: Int) -> UInt64 { UInt64(initiator) << 32 | UInt64(responder) }
}
