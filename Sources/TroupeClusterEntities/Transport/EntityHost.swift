import Distributed
import TroupeCluster

/// What a node's ``EntityHost`` hands its batches to: the node's region of the kind.
protocol EntityInbox: AnyObject, Sendable {
    func receive(_ batch: EntityBatch)
    func receiveAsk(_ envelope: EntityEnvelope) async -> EntityAnswer
    /// Bytes from another node that are not a batch or a request.
    func refused(_ error: EntityWire.Malformed)
    /// Another member is leaving: it owns nothing from now on, and confirms the view once its
    /// activations have stopped.
    func leaving(_ member: UInt64)
    /// What this node's region holds now (nil: the region is gone).
    func load() -> NodeEntityLoad?
}

/// A kind's endpoint on one node: checked in with the receptionist under the kind's key, so
/// that the region on every node knows who holds the kind (its placement's members) and
/// where to send a batch.
distributed actor EntityHost: ClusterActor {
    typealias ActorSystem = ClusterSystem

    /// The region's forwarder (which holds the region weakly: the region holds this host).
    private let inbox: any EntityInbox

    init(actorSystem: ClusterSystem, inbox: any EntityInbox) {
        self.actorSystem = actorSystem
        self.inbox = inbox
    }

    /// Takes a batch from another node. Runs on this host's Troupe executor, one batch at a
    /// time; returns once every item is in a mailbox, forwarded, or answered.
    distributed func deliver(_ batch: [UInt8]) {
        do {
            inbox.receive(try EntityWire.decodeBatch(batch))
        } catch {
            inbox.refused(error)
        }
    }

    /// `member` is leaving the kind: placement here stops giving it identities at once, and
    /// waits for its confirmation before they start elsewhere. Returns once applied.
    distributed func announceLeaving(member: UInt64) {
        inbox.leaving(member)
    }

    /// What this node's region of the kind holds now (asked by the others for their snapshot
    /// sections and ``ClusterEntityRegion/loadByNode()``).
    distributed func load() throws -> NodeEntityLoad {
        guard let load = inbox.load() else { throw RegionGone() }
        return load
    }

    struct RegionGone: Error, CustomStringConvertible {
        var description: String { "the region of this kind is gone on that node" }
    }

    /// Takes one request from a node whose line to this one was idle (so everything it sent
    /// before is already in a mailbox here), and answers it in this call's reply: one round
    /// trip. A request for an identity this node does not own is sent on, and answered
    /// through the lines (the answer here says so).
    distributed func ask(_ envelope: [UInt8]) async -> [UInt8] {
        do {
            return EntityWire.encode(await inbox.receiveAsk(try EntityWire.decodeEnvelope(envelope)))
        } catch {
            inbox.refused(error)
            return EntityWire.encode(EntityAnswer(askID: 0, code: .serialization, payload: Array("\(error)".utf8)))
        }
    }
}
