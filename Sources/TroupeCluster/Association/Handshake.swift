import NIOCore
import TroupeClusterMembership

/// The handshake's proofs: each side shows it knows the cluster secret by an HMAC-SHA256 over
/// both fresh nonces and both identities, with a different label per role, so a proof is
/// useless for any other connection, direction or node (no replay, no reflection). The secret
/// itself never leaves the node.
///
/// 1. The initiator sends `hello(cluster, initiator, nonceI)`.
/// 2. The responder answers `challenge(responder, nonceR, proofR)`.
/// 3. The initiator checks `proofR`, then sends `proof(proofI)`; the responder checks it.
/// Either side that finds a wrong proof refuses, closes the connection and counts it.
///
/// A refusal that tells the peer the cluster removed it carries ``downProof(down:initiator:responder:initiatorNonce:responderNonce:)``,
/// an HMAC over the same fields with a label naming which side is down: a stranger cannot make
/// a node leave, and a captured notice is useless on any other connection.
package struct Handshake: Sendable {
    /// The secret's bytes, the HMAC key.
    private let secret: [UInt8]
    package let clusterName: String

    package init(secret: String, clusterName: String) {
        self.secret = Array(secret.utf8)
        self.clusterName = clusterName
    }

    static func nonce() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<WireEnvelope.nonceLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    func responderProof(
        initiator: ClusterNode, responder: ClusterNode, initiatorNonce: [UInt8], responderNonce: [UInt8]
    ) -> [UInt8] {
        proof(
            label: "troupe-responder", initiator: initiator, responder: responder,
            first: initiatorNonce, second: responderNonce)
    }

    func initiatorProof(
        initiator: ClusterNode, responder: ClusterNode, initiatorNonce: [UInt8], responderNonce: [UInt8]
    ) -> [UInt8] {
        proof(
            label: "troupe-initiator", initiator: initiator, responder: responder,
            first: responderNonce, second: initiatorNonce)
    }

    /// The proof that goes with "you are down": `down` is the initiator or the responder.
    func downProof(
        down: ClusterNode, initiator: ClusterNode, responder: ClusterNode, initiatorNonce: [UInt8],
        responderNonce: [UInt8]
    ) -> [UInt8] {
        proof(
            label: down == initiator ? "troupe-initiator-is-down" : "troupe-responder-is-down",
            initiator: initiator, responder: responder, first: initiatorNonce, second: responderNonce)
    }

    /// Compares in time that does not depend on where the two differ.
    func verify(_ received: [UInt8], equals expected: [UInt8]) -> Bool {
        guard received.count == expected.count else { return false }
        var difference: UInt8 = 0
        for index in received.indices { difference |= received[index] ^ expected[index] }
        return difference == 0
    }

    private func proof(
        label: String, initiator: ClusterNode, responder: ClusterNode, first: [UInt8], second: [UInt8]
    ) -> [UInt8] {
        var message = ByteBuffer()
        message.writeWireString(label)
        message.writeWireString(clusterName)
        message.writeMember(initiator)
        message.writeMember(responder)
        message.writeBytes(first)
        message.writeBytes(second)
        return message.withUnsafeReadableBytes { HMACSHA256.authenticationCode(for: $0, key: secret) }
    }
}
