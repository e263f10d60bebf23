import NIOCore
import TroupeClusterMembership

// Decoding: total over any byte string (an envelope or a `WireError`, never a trap).

extension WireEnvelope {
    /// Decodes one envelope from a frame's payload (without the length prefix), which it must
    /// fill exactly.
    static func decode(_ payload: ByteBuffer) throws(WireError) -> WireEnvelope {
        do {
            var reader = WireReader(buffer: payload)
            let envelope = try decode(from: &reader)
            try reader.expectEnd("the envelope")
            return envelope
        } catch let error as WireError {
            throw error
        } catch {
            throw WireError.malformed("\(error)")
        }
    }

    private static func decode(from reader: inout WireReader) throws -> WireEnvelope {
        let (version, rawKind) = try reader.header()
        guard version == Self.version else { throw WireError.unsupportedVersion(version) }
        guard let kind = Kind(rawValue: rawKind) else { throw WireError.unknownKind(rawKind) }
        switch kind {
        case .hello:
            let name = try reader.string("cluster name")
            let from = try reader.member()
            let nonce = try reader.fixed(nonceLength, "nonce")
            return .hello(Hello(clusterName: name, from: from, nonce: nonce))
        case .challenge:
            let from = try reader.member()
            let nonce = try reader.fixed(nonceLength, "nonce")
            let proof = try reader.fixed(proofLength, "proof")
            return .challenge(Challenge(from: from, nonce: nonce, proof: proof))
        case .proof:
            return .proof(Proof(proof: try reader.fixed(proofLength, "proof")))
        case .refused:
            let reason = try reader.string("reason")
            switch try reader.u8("down notice flag") {
            case 0: return .refused(Refusal(reason: reason))
            case 1:
                let from = try reader.member()
                let nonce = try reader.fixed(nonceLength, "nonce")
                let proof = try reader.fixed(proofLength, "proof")
                return .refused(
                    Refusal(reason: reason, downNotice: DownNotice(from: from, responderNonce: nonce, proof: proof)))
            case let flag: throw WireError.malformed("down notice flag \(flag)")
            }
        case .invocation:
            let (callID, uid, number) = try reader.threeU64("call id, recipient uid and number")
            let target = try reader.string("target")
            var substitutions: [String] = []
            for _ in 0..<(try reader.count("generic substitutions")) {
                substitutions.append(try reader.string("generic substitution"))
            }
            var arguments: [ByteBuffer] = []
            let argumentCount = try reader.count("arguments")
            arguments.reserveCapacity(argumentCount)
            for _ in 0..<argumentCount { arguments.append(try reader.bytes("argument")) }
            return .invocation(
                Invocation(
                    callID: callID, recipientUID: uid, recipientNumber: number, target: target,
                    genericSubstitutions: substitutions, arguments: arguments))
        case .reply:
            let callID = try reader.u64("call id")
            switch try reader.u8("outcome") {
            case 0: return .reply(Reply(callID: callID, outcome: .value(try reader.bytes("value"))))
            case 1: return .reply(Reply(callID: callID, outcome: .void))
            case 2:
                let rawCode = try reader.u8("failure code")
                guard let code = RemoteFailure.Code(rawValue: rawCode) else {
                    throw WireError.malformed("unknown failure code \(rawCode)")
                }
                let typeName = try reader.string("failure type")
                let message = try reader.string("failure message")
                let failure = RemoteFailure(code: code, typeName: typeName, message: message)
                return .reply(Reply(callID: callID, outcome: .failure(failure)))
            case let other: throw WireError.malformed("unknown outcome \(other)")
            }
        case .membership:
            return .membership(try reader.swim())
        case .receptionist:
            let rawOperation = try reader.u8("receptionist operation")
            guard let operation = ReceptionistUpdate.Operation(rawValue: rawOperation) else {
                throw WireError.malformed("unknown receptionist operation \(rawOperation)")
            }
            var entries: [ReceptionistUpdate.Entry] = []
            for _ in 0..<(try reader.count("receptionist entries")) {
                let key = try reader.string("receptionist key")
                entries.append(ReceptionistUpdate.Entry(key: key, actorNumber: try reader.u64("actor number")))
            }
            return .receptionist(ReceptionistUpdate(operation: operation, entries: entries))
        case .watch:
            return .watch(actorNumber: try reader.u64("actor number"))
        case .unwatch:
            return .unwatch(actorNumber: try reader.u64("actor number"))
        case .terminated:
            return .terminated(actorNumber: try reader.u64("actor number"))
        case .leaving:
            return .leaving
        }
    }
}

extension WireReader {
    mutating func member() throws -> ClusterNode {
        let host = try string("host")
        let port = Int(try u16("port"))
        return ClusterNode(host: host, port: port, uid: try u64("uid"))
    }

    static let maximumGossipItems = 256

    mutating func swim() throws -> SWIMMessage {
        let tag = try u8("membership message")
        let sequence = try u64("sequence")
        var target: ClusterNode?
        switch tag {
        case 1: break
        case 2, 3: target = try member()
        default: throw WireError.malformed("unknown membership message \(tag)")
        }
        var gossip: [SWIMMessage.Gossip] = []
        let items = try count("gossip")
        // SWIM piggy-backs a few changes per message (ClusterMembershipSettings.gossipPerMessage):
        // a message with more is malformed, whatever the frame size allows.
        guard items <= Self.maximumGossipItems else {
            throw WireError.malformed("\(items) gossip items (at most \(Self.maximumGossipItems))")
        }
        for _ in 0..<items {
            let member = try member()
            let status: ClusterMemberStatus
            switch try u8("status") {
            case 0: status = .alive(incarnation: try u64("incarnation"))
            case 1: status = .suspect(incarnation: try u64("incarnation"))
            case 2: status = .unreachable(incarnation: try u64("incarnation"))
            case 3: status = .down
            case let other: throw WireError.malformed("unknown member status \(other)")
            }
            gossip.append(SWIMMessage.Gossip(member: member, status: status))
        }
        switch tag {
        case 1: return .ping(sequence: sequence, gossip: gossip)
        case 2: return .pingRequest(sequence: sequence, target: target!, gossip: gossip)
        default: return .ack(sequence: sequence, target: target!, gossip: gossip)
        }
    }
}
