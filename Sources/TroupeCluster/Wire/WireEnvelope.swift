import NIOCore
import TroupeClusterMembership

/// Everything nodes say to each other, one envelope per frame: `[UInt8 version][UInt8 kind]`
/// then the kind's body, integers big-endian, strings and byte strings prefixed by a `UInt32`
/// length, lists by a `UInt16` count. A frame is `[UInt32 length][envelope]`
/// (see `FrameDecoder`).
///
/// Decoding is total: any byte string either decodes to exactly one envelope or throws a
/// ``WireError``; it never traps, and never reads past the frame (the fuzz tests hold it to
/// that).
package enum WireEnvelope: Sendable, Equatable {
    // The handshake (see `Handshake`): hello → challenge → proof, or refused.
    case hello(Hello)
    case challenge(Challenge)
    case proof(Proof)
    /// The handshake failed, with the reason. A refusal can tell the peer that the cluster
    /// removed it, but only with a ``DownNotice`` proved like the handshake itself: an
    /// unproved refusal closes one connection and changes nothing else.
    case refused(Refusal)
    // Established associations.
    case invocation(Invocation)
    case reply(Reply)
    case membership(SWIMMessage)
    case receptionist(ReceptionistUpdate)
    case watch(actorNumber: UInt64)
    case unwatch(actorNumber: UInt64)
    case terminated(actorNumber: UInt64)
    /// The sender leaves the cluster: its peers mark it down at once.
    case leaving

    /// The wire version. A peer speaking another is refused at the handshake. Version 2 (the
    /// proved "you are down" notice) replaced version 1.
    static let version: UInt8 = 2

    enum Kind: UInt8 {
        case hello = 1, challenge, proof, refused
        case invocation = 10, reply, membership, receptionist, watch, unwatch, terminated, leaving
    }

    package struct Hello: Sendable, Equatable {
        package let clusterName: String
        package let from: ClusterNode
        package let nonce: [UInt8]

        package init(clusterName: String, from: ClusterNode, nonce: [UInt8]) {
            self.clusterName = clusterName
            self.from = from
            self.nonce = nonce
        }
    }

    package struct Challenge: Sendable, Equatable {
        package let from: ClusterNode
        package let nonce: [UInt8]
        package let proof: [UInt8]

        package init(from: ClusterNode, nonce: [UInt8], proof: [UInt8]) {
            self.from = from
            self.nonce = nonce
            self.proof = proof
        }
    }

    package struct Proof: Sendable, Equatable {
        package let proof: [UInt8]

        package init(proof: [UInt8]) { self.proof = proof }
    }

    package struct Refusal: Sendable, Equatable {
        /// Why, for the peer's log (a receiver treats it as untrusted text).
        package let reason: String
        /// Present when the refusing node says that the cluster removed the peer.
        package let downNotice: DownNotice?

        package init(reason: String, downNotice: DownNotice? = nil) {
            self.reason = reason
            self.downNotice = downNotice
        }
    }

    /// "The cluster removed you", proved: an HMAC over both of this connection's nonces and
    /// both identities (``Handshake/downProof(down:initiator:responder:initiatorNonce:responderNonce:)``),
    /// so only a node that knows the secret can say it, and only on the connection it answers.
    package struct DownNotice: Sendable, Equatable {
        /// The node that says it.
        package let from: ClusterNode
        /// The responder's nonce (a responder refusing a hello has not sent one yet).
        package let responderNonce: [UInt8]
        package let proof: [UInt8]

        package init(from: ClusterNode, responderNonce: [UInt8], proof: [UInt8]) {
            self.from = from
            self.responderNonce = responderNonce
            self.proof = proof
        }
    }

    package struct Invocation: Sendable, Equatable {
        let callID: UInt64
        /// The recipient's node uid: an id from an earlier run of the node is unknown here.
        let recipientUID: UInt64
        let recipientNumber: UInt64
        let target: String
        let genericSubstitutions: [String]
        let arguments: [ByteBuffer]
    }

    package struct Reply: Sendable, Equatable {
        let callID: UInt64
        let outcome: Outcome

        enum Outcome: Sendable, Equatable {
            case value(ByteBuffer)
            case void
            case failure(RemoteFailure)
        }
    }

    /// A failure on the callee's side, as it travels back.
    struct RemoteFailure: Sendable, Equatable {
        enum Code: UInt8 {
            case unknownActor = 1, serialization, thrown, invalidInvocation
        }
        let code: Code
        /// The type concerned: the one that failed to decode, or the error thrown.
        let typeName: String
        let message: String
    }

    package struct ReceptionistUpdate: Sendable, Equatable {
        package enum Operation: UInt8, Sendable {
            /// The sender's complete set of registrations (sent once an association is up).
            case snapshot = 1
            case checkIn, checkOut
        }
        package let operation: Operation
        package let entries: [Entry]

        package init(operation: Operation, entries: [Entry]) {
            self.operation = operation
            self.entries = entries
        }

        package struct Entry: Sendable, Hashable {
            package let key: String
            package let actorNumber: UInt64

            package init(key: String, actorNumber: UInt64) {
                self.key = key
                self.actorNumber = actorNumber
            }
        }
    }

    package static let nonceLength = 32
    package static let proofLength = 32
}
