import NIOCore
import TroupeClusterMembership

@testable import TroupeCluster

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The seed inputs (`troupe-cluster-fuzz --write-seeds DIR`): valid frames of every envelope
/// kind, valid encodings of every coder type, and complete handshake transcripts in both roles,
/// each behind the byte that selects its target.
enum Seeds {
    static let member = ClusterNode(host: "127.0.0.1", port: 7337, uid: 42)

    /// One envelope of every kind and variant (as in WireTests).
    static var envelopes: [WireEnvelope] {
        [
            .hello(.init(clusterName: "c", from: member, nonce: Array(repeating: 1, count: 32))),
            .challenge(
                .init(from: member, nonce: Array(repeating: 2, count: 32), proof: Array(repeating: 3, count: 32))),
            .proof(.init(proof: Array(repeating: 4, count: 32))),
            .refused(.init(reason: "no")),
            .refused(
                .init(
                    reason: "down",
                    downNotice: .init(
                        from: member, responderNonce: Array(repeating: 5, count: 32),
                        proof: Array(repeating: 6, count: 32)))),
            .invocation(
                .init(
                    callID: 7, recipientUID: 42, recipientNumber: 3, target: "$s4Main7GreeterC5greetyS2SF",
                    genericSubstitutions: ["Si"], arguments: [ByteBuffer(string: "\"Ada\""), ByteBuffer()])),
            .invocation(
                .init(
                    callID: .max, recipientUID: 1 << 63, recipientNumber: 0, target: "$s4Main7GreeterC5greetyS2SF",
                    genericSubstitutions: [],
                    arguments: [ByteBuffer(string: "Ada"), ByteBuffer(), ByteBuffer(repeating: 7, count: 300)])),
            .invocation(
                .init(
                    callID: 0, recipientUID: 2, recipientNumber: 9, target: "", genericSubstitutions: [], arguments: [])
            ),
            .reply(.init(callID: 7, outcome: .value(ByteBuffer(string: "\"Hello\"")))),
            .reply(.init(callID: 6, outcome: .value(ByteBuffer()))),
            .reply(.init(callID: 8, outcome: .void)),
            .reply(.init(callID: 9, outcome: .failure(.init(code: .thrown, typeName: "E", message: "m")))),
            .membership(
                .pingRequest(
                    sequence: 5, target: member,
                    gossip: [
                        .init(member: member, status: .suspect(incarnation: 2)), .init(member: member, status: .down),
                    ])),
            .membership(
                .ack(sequence: 1, target: member, gossip: [.init(member: member, status: .unreachable(incarnation: 9))])
            ),
            .membership(.ping(sequence: 2, gossip: [.init(member: member, status: .alive(incarnation: 0))])),
            .receptionist(.init(operation: .snapshot, entries: [.init(key: "k|T", actorNumber: 1)])),
            .receptionist(.init(operation: .checkIn, entries: [])),
            .receptionist(
                .init(
                    operation: .checkOut, entries: [.init(key: "a", actorNumber: 2), .init(key: "b", actorNumber: 3)])),
            .watch(actorNumber: 1), .unwatch(actorNumber: 2), .terminated(actorNumber: 3), .leaving,
        ]
    }

    /// The envelopes of an established association (one of each kind).
    static var associationEnvelopes: [WireEnvelope] {
        envelopes.filter {
            switch $0 {
            case .hello, .challenge, .proof, .refused: false
            default: true
            }
        }
    }

    static func payload(_ envelope: WireEnvelope) -> [UInt8] {
        var buffer = ByteBuffer()
        envelope.write(into: &buffer)
        return Array(buffer.readableBytesView)
    }

    static func frames(_ envelopes: [WireEnvelope]) -> [UInt8] {
        var buffer = ByteBuffer()
        for envelope in envelopes { envelope.writeFrame(into: &buffer) }
        return Array(buffer.readableBytesView)
    }

    /// Every seed: a file name and its bytes.
    static func all() -> [(name: String, bytes: [UInt8])] {
        var seeds: [(String, [UInt8])] = []
        func add(_ target: FuzzTarget, _ name: String, _ bytes: [UInt8]) {
            seeds.append(("seed-\(target)-\(name)", [target.rawValue] + bytes))
        }

        // Frames: limits byte (first frame's limit | later frames' << 3), read size, stream.
        let stream = frames(envelopes)
        let roomy: UInt8 = 5 | 6 << 3  // 64 KiB, then 1 MiB
        add(.frames, "all-kinds-one-read", [roomy, 0] + stream)
        add(.frames, "all-kinds-byte-reads", [roomy, 1] + stream)
        add(.frames, "all-kinds-7-byte-reads", [roomy, 7] + stream)
        add(.frames, "all-kinds-cut-short", [roomy, 0] + stream.dropLast(3))
        add(.frames, "first-frame-too-large", [2 | 6 << 3, 0] + frames([envelopes[5]]))
        add(.frames, "later-frame-too-large", [5 | 2 << 3, 3] + frames([.leaving, envelopes[5]]))
        add(.frames, "frame-shorter-than-envelope", [roomy, 0] + frames([.leaving]) + [0, 0, 0, 1, 2])

        // Envelopes: one payload each.
        for (index, envelope) in envelopes.enumerated() {
            add(.envelope, "\(index < 10 ? "0" : "")\(index)-\(envelope.kindName)", payload(envelope))
        }

        // Coder: type index, then a valid encoding.
        for (index, kind) in CoderFuzz.cases.enumerated() {
            for (sample, bytes) in kind.seeds().enumerated() {
                let name = kind.name.filter { $0.isLetter || $0.isNumber }
                add(
                    .coder, "\(index < 10 ? "0" : "")\(index)-\(name)-\(sample)",
                    [UInt8(index)] + Array(bytes.readableBytesView))
            }
        }

        // Handshakes. Settings: bit 0 responder, bits 1-2 the down rule (1: everybody down).
        let h = HandshakeFuzz.self
        let known = h.knownHandshake
        let initiatorSide: UInt8 = 0
        let responderSide: UInt8 = 1
        let everybodyDown: UInt8 = 1 << 1
        let hello = WireEnvelope.hello(.init(clusterName: h.clusterName, from: h.initiatorID, nonce: h.initiatorNonce))
        let challenge = WireEnvelope.challenge(
            .init(
                from: h.responderID, nonce: h.responderNonce,
                proof: known.responderProof(
                    initiator: h.initiatorID, responder: h.responderID, initiatorNonce: h.initiatorNonce,
                    responderNonce: h.responderNonce)))
        let proof = WireEnvelope.proof(
            .init(
                proof: known.initiatorProof(
                    initiator: h.initiatorID, responder: h.responderID, initiatorNonce: h.initiatorNonce,
                    responderNonce: h.responderNonce)))
        // "You are down", proved by the responder (refusing the hello) and by the initiator
        // (refusing the challenge).
        let initiatorIsDown = WireEnvelope.refused(
            .init(
                reason: "marked down",
                downNotice: .init(
                    from: h.responderID, responderNonce: h.responderNonce,
                    proof: known.downProof(
                        down: h.initiatorID, initiator: h.initiatorID, responder: h.responderID,
                        initiatorNonce: h.initiatorNonce, responderNonce: h.responderNonce))))
        let responderIsDown = WireEnvelope.refused(
            .init(
                reason: "marked down",
                downNotice: .init(
                    from: h.initiatorID, responderNonce: h.responderNonce,
                    proof: known.downProof(
                        down: h.responderID, initiator: h.initiatorID, responder: h.responderID,
                        initiatorNonce: h.initiatorNonce, responderNonce: h.responderNonce))))
        let lateHello = WireEnvelope.hello(
            .init(clusterName: h.clusterName, from: h.initiatorID, nonce: h.initiatorNonce))

        add(
            .handshakeKnownSecret, "initiator-transcript",
            [initiatorSide] + frames([challenge] + associationEnvelopes + [lateHello]))
        add(
            .handshakeKnownSecret, "responder-transcript",
            [responderSide] + frames([hello, proof] + associationEnvelopes + [.refused(.init(reason: "late"))]))
        add(
            .handshakeKnownSecret, "initiator-refuses-down-responder",
            [initiatorSide | everybodyDown] + frames([challenge]))
        add(
            .handshakeKnownSecret, "responder-refuses-down-initiator", [responderSide | everybodyDown] + frames([hello])
        )
        add(.handshakeKnownSecret, "initiator-told-it-is-down", [initiatorSide] + frames([initiatorIsDown]))
        add(.handshakeKnownSecret, "responder-told-it-is-down", [responderSide] + frames([hello, responderIsDown]))
        add(
            .handshakeKnownSecret, "initiator-plain-refusal",
            [initiatorSide] + frames([.refused(.init(reason: "no\nthanks"))]))

        // The same transcripts against a secret that no input knows: all refused.
        add(
            .handshakeUnknownSecret, "initiator-transcript",
            [initiatorSide] + frames([challenge] + associationEnvelopes))
        add(
            .handshakeUnknownSecret, "responder-transcript",
            [responderSide] + frames([hello, proof] + associationEnvelopes))
        add(
            .handshakeUnknownSecret, "responder-refuses-down-initiator",
            [responderSide | everybodyDown] + frames([hello]))
        add(.handshakeUnknownSecret, "initiator-told-it-is-down", [initiatorSide] + frames([initiatorIsDown]))
        add(.handshakeUnknownSecret, "responder-told-it-is-down", [responderSide] + frames([hello, responderIsDown]))
        add(
            .handshakeUnknownSecret, "responder-other-cluster",
            [responderSide]
                + frames([.hello(.init(clusterName: "other\u{1B}[31m", from: h.initiatorID, nonce: h.initiatorNonce))]))
        add(
            .handshakeUnknownSecret, "responder-hello-from-itself",
            [responderSide]
                + frames([.hello(.init(clusterName: h.clusterName, from: h.responderID, nonce: h.initiatorNonce))]))
        add(.handshakeUnknownSecret, "initiator-association-first", [initiatorSide] + frames([.leaving]))
        return seeds
    }

    /// Writes every seed into `directory` (created if needed).
    static func write(to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let seeds = all()
        for seed in seeds {
            let path = directory + "/" + seed.name
            guard FileManager.default.createFile(atPath: path, contents: Data(seed.bytes)) else {
                throw SeedError(path: path)
            }
        }
        print("\(seeds.count) seeds written to \(directory)")
    }

    struct SeedError: Error, CustomStringConvertible {
        let path: String
        var description: String { "cannot write \(path)" }
    }
}
