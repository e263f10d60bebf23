import TroupeCluster
import TroupeClusterMembership

/// What one node sends another for a kind: messages and requests for entities the receiver
/// is believed to hold, and answers to requests the receiver asked. Items are handled in the
/// order they are listed, and a node sends one batch at a time to each other node, so the
/// order in which one node sends to an entity is the order in which the entity receives.
struct EntityBatch: Sendable {
    /// The sending member's uid (which line this is: the handoff parks what a line sends after
    /// a marker of owners this node has not adopted).
    var sender: UInt64 = 0
    var envelopes: [EntityEnvelope] = []
    var answers: [EntityAnswer] = []

    var isEmpty: Bool { envelopes.isEmpty && answers.isEmpty }
    var count: Int { envelopes.count + answers.count }
}

/// A message (``request`` nil) or a request for the entity `key`.
struct EntityEnvelope: Sendable {
    var key: String
    /// The message, or the request, in the cluster's coder.
    var payload: [UInt8]
    /// The request's mangled type name; nil for a message.
    var request: String?
    /// The asking node's number for the request (0 for a message).
    var askID: UInt64 = 0
    /// The asking node (answers go there, also after forwarding); nil for a message.
    var origin: ClusterNode?
    /// How many nodes forwarded it because they did not own `key`.
    var hops: UInt8 = 0
    /// Not for an entity: a step of the handoff, in line with the items around it (`key`
    /// and `payload` empty).
    var signal: HandoffSignal?

    var byteCount: Int { key.utf8.count + payload.count + (request?.utf8.count ?? 0) + 48 }

    static func signal(_ signal: HandoffSignal) -> EntityEnvelope {
        EntityEnvelope(key: "", payload: [], signal: signal)
    }
}

/// A step of the handoff that travels in a line, behind everything the sender sent before it
/// (see `Handoff`).
struct HandoffSignal: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        /// "I route by the owners with this fingerprint from here on."
        case marker = 1
        /// "Every marker of this fingerprint reached me, everything sent to me before them is
        /// routed by it, and nothing of another owner runs here."
        case confirm = 2
    }
    let kind: Kind
    let fingerprint: UInt64
    /// The sending member's uid.
    let member: UInt64
    /// Which of that node's regions of the kind sent it: its host's actor number, which grows
    /// each time a region of the kind is made again on the node. A signal of an older one is
    /// stale (that region is gone: what it confirmed says nothing of the new one's activations).
    let incarnation: UInt64
}

/// The outcome of a request, for the node that asked it.
struct EntityAnswer: Sendable {
    enum Code: UInt8, Sendable {
        case value = 0, recipientStopped, noReply, systemShutdown, undeliverable, failed, timedOut
        case unknownRequestType, serialization
        /// Only in a direct ask's reply: the request was sent on to its owner, whose answer
        /// comes through the lines.
        case forwarded
    }
    var askID: UInt64
    var code: Code
    /// The response in the cluster's coder (for `.value`), or the failure's text.
    var payload: [UInt8]

    var byteCount: Int { payload.count + 16 }
}
