import NIOCore
import TroupeClusterMembership

@testable import TroupeCluster

/// Input: one byte of settings (bit 0: this node's role, initiator or responder; bits 1-2:
/// which members this node holds down: nobody, everybody, odd uids, everybody but the node's
/// usual peer), then a byte stream of frames from the peer. Each frame is decoded and fed to a
/// `HandshakeStateMachine`, until the stream ends or a frame or envelope is refused (which
/// closes the real connection). Every action is checked against the state it was taken in,
/// with the proofs recomputed here.
///
/// Unknown secret: the node's secret is 32 random bytes drawn when the process starts, so no
/// input (the corpus was written by other processes) contains it or any proof made with it.
/// The machine must then never establish, deliver or accept a "you are down": the fuzzer can
/// only get there through a bug. Its log reasons must be escaped peer text (printable ASCII).
///
/// Known secret: a fixed secret and fixed nonces, so that the corpus holds complete handshake
/// transcripts and the fuzzer explores the established state and proved refusals.
enum HandshakeFuzz {
    static let clusterName = "fuzz"
    static let initiatorID = ClusterNode(host: "10.0.0.1", port: 7001, uid: 11)
    static let responderID = ClusterNode(host: "10.0.0.2", port: 7002, uid: 22)
    static let initiatorNonce = [UInt8](repeating: 0x11, count: WireEnvelope.nonceLength)
    static let responderNonce = [UInt8](repeating: 0x22, count: WireEnvelope.nonceLength)
    static let knownSecret = "troupe-fuzz-known-secret-0123456789"
    static let unknownSecret: String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(UInt8.random(in: .min ... .max, using: &generator), radix: 16) }.joined()
    }()
    static let knownHandshake = Handshake(secret: knownSecret, clusterName: clusterName)
    static let unknownHandshake = Handshake(secret: unknownSecret, clusterName: clusterName)

    typealias Machine = HandshakeStateMachine

    static func run(_ input: UnsafeBufferPointer<UInt8>, secretKnown: Bool) {
        guard let settings = input.first else { return }
        let role: Machine.Role = settings & 1 == 0 ? .initiator : .responder
        let myself = role == .initiator ? initiatorID : responderID
        let usualPeer = role == .initiator ? responderID : initiatorID
        let myNonce = role == .initiator ? initiatorNonce : responderNonce
        let downRule = (settings >> 1) & 3
        let isDown: (ClusterNode) -> Bool = { member in
            switch downRule {
            case 0: false
            case 1: true
            case 2: member.uid & 1 == 1
            default: member != usualPeer
            }
        }
        let handshake = secretKnown ? knownHandshake : unknownHandshake
        var machine = Machine(role: role, myself: myself, handshake: handshake, nonce: myNonce)
        let hello = machine.start()
        switch role {
        case .initiator:
            fuzzCheck(
                hello == .hello(.init(clusterName: clusterName, from: myself, nonce: myNonce)), "the initiator's hello")
        case .responder:
            fuzzCheck(hello == nil, "a responder that speaks first")
        }

        var stream = ByteBuffer(bytes: UnsafeBufferPointer(rebasing: input[1...]))
        while true {
            var decoder = FrameDecoder(maximumFrameSize: 1 << 16)
            guard let frame = try? decoder.decode(buffer: &stream),
                let envelope = try? WireEnvelope.decode(frame)
            else { break }
            let before = machine.state
            let action = machine.receive(envelope, isDown: isDown)
            check(
                action, after: envelope, in: before, now: machine.state, myself: myself, myNonce: myNonce,
                role: role, handshake: handshake, secretKnown: secretKnown, isDown: isDown)
        }
        machine.close()
        fuzzCheck(machine.state == .closed && machine.peer == nil, "close() did not close")
        fuzzCheck(machine.receive(.leaving, isDown: isDown) == .ignore, "a closed machine acted")
    }

    // Every action, against the state it was taken in.
    static func check(
        _ action: Machine.Action, after envelope: WireEnvelope, in before: Machine.State, now: Machine.State,
        myself: ClusterNode, myNonce: [UInt8], role: Machine.Role, handshake: Handshake, secretKnown: Bool,
        isDown: (ClusterNode) -> Bool
    ) {
        let what = { "\(action) after \(envelope.kindName) in \(before) (\(role))" }
        if before == .closed {
            fuzzCheck(action == .ignore && now == .closed, "a closed machine acted: \(what())")
            return
        }
        switch action {
        case .ignore:
            fuzzFailure("ignored an envelope while open: \(what())")

        case .send(let reply):
            // Only the responder's challenge to a hello.
            guard role == .responder, before == .awaitingHello, case .hello(let hello) = envelope,
                case .challenge(let challenge) = reply
            else { fuzzFailure("unexpected send: \(what())") }
            fuzzCheck(
                hello.clusterName == clusterName && hello.from != myself && !isDown(hello.from),
                "challenged a hello it should refuse: \(what())")
            let proof = handshake.responderProof(
                initiator: hello.from, responder: myself, initiatorNonce: hello.nonce, responderNonce: myNonce)
            fuzzCheck(
                challenge.from == myself && challenge.nonce == myNonce && challenge.proof == proof,
                "a wrong challenge: \(what())")
            fuzzCheck(
                now == .awaitingProof(peer: hello.from, initiatorNonce: hello.nonce),
                "state after the challenge: \(now)")

        case .establish(let peer, let then):
            fuzzCheck(secretKnown, "established a connection without knowing the secret: \(what())")
            switch (role, before, envelope) {
            case (.initiator, .awaitingChallenge, .challenge(let challenge)):
                let expected = handshake.responderProof(
                    initiator: myself, responder: challenge.from, initiatorNonce: myNonce,
                    responderNonce: challenge.nonce)
                fuzzCheck(challenge.proof == expected, "established on a wrong responder proof: \(what())")
                fuzzCheck(
                    peer == challenge.from && peer != myself && !isDown(peer),
                    "established with the wrong peer: \(what())")
                let proof = handshake.initiatorProof(
                    initiator: myself, responder: peer, initiatorNonce: myNonce, responderNonce: challenge.nonce)
                fuzzCheck(then == .proof(.init(proof: proof)), "the initiator's proof is wrong: \(what())")
            case (.responder, .awaitingProof(let expectedPeer, let theirNonce), .proof(let proof)):
                let expected = handshake.initiatorProof(
                    initiator: expectedPeer, responder: myself, initiatorNonce: theirNonce, responderNonce: myNonce)
                fuzzCheck(proof.proof == expected, "established on a wrong initiator proof: \(what())")
                fuzzCheck(peer == expectedPeer && then == nil, "established with the wrong peer: \(what())")
            default:
                fuzzFailure("established out of turn: \(what())")
            }
            fuzzCheck(now == .established(peer: peer), "state after establishing: \(now)")
            Reached.established += 1

        case .deliver(let delivered, let from):
            fuzzCheck(secretKnown, "delivered an envelope without the secret: \(what())")
            guard case .established(let peer) = before else { fuzzFailure("delivered before the handshake: \(what())") }
            switch envelope {
            case .hello, .challenge, .proof, .refused: fuzzFailure("delivered a handshake envelope: \(what())")
            default: break
            }
            fuzzCheck(delivered == envelope && from == peer && now == before, "delivered wrongly: \(what())")
            Reached.delivered += 1

        case .refuse(let refusal, let reason):
            fuzzCheck(now == .closed, "refused and stayed open: \(what())")
            if case .established = before { fuzzFailure("refused after the handshake: \(what())") }
            if !secretKnown { checkLogText(reason, what()) }
            if let notice = refusal.downNotice {
                // A proved "you are down": the peer, knowing the secret, must accept it.
                switch (role, envelope) {
                case (.responder, .hello(let hello)):
                    fuzzCheck(isDown(hello.from), "a down notice for a member not down: \(what())")
                    let proof = handshake.downProof(
                        down: hello.from, initiator: hello.from, responder: myself, initiatorNonce: hello.nonce,
                        responderNonce: myNonce)
                    fuzzCheck(
                        notice == .init(from: myself, responderNonce: myNonce, proof: proof),
                        "a wrong down notice: \(what())")
                case (.initiator, .challenge(let challenge)):
                    fuzzCheck(secretKnown, "the initiator checked a challenge without the secret: \(what())")
                    fuzzCheck(isDown(challenge.from), "a down notice for a member not down: \(what())")
                    let proof = handshake.downProof(
                        down: challenge.from, initiator: myself, responder: challenge.from, initiatorNonce: myNonce,
                        responderNonce: challenge.nonce)
                    fuzzCheck(
                        notice == .init(from: myself, responderNonce: challenge.nonce, proof: proof),
                        "a wrong down notice: \(what())")
                default:
                    fuzzFailure("a down notice out of turn: \(what())")
                }
            }

        case .close(let reason):
            // Only a plain refusal from the peer, before the handshake completed.
            fuzzCheck(now == .closed, "closed and stayed open: \(what())")
            guard case .refused(let refusal) = envelope, refusal.downNotice == nil else {
                fuzzFailure("closed on something other than a plain refusal: \(what())")
            }
            if case .established = before { fuzzFailure("a refusal after the handshake only closed: \(what())") }
            if !secretKnown { checkLogText(reason, what()) }

        case .violation(let reason):
            fuzzCheck(now == .closed, "a violation left the connection open: \(what())")
            if !secretKnown { checkLogText(reason, what()) }

        case .removedFromCluster(let by, _):
            fuzzCheck(secretKnown, "accepted \"you are down\" without the secret: \(what())")
            guard case .refused(let refusal) = envelope, let notice = refusal.downNotice else {
                fuzzFailure("removed from the cluster without a down notice: \(what())")
            }
            fuzzCheck(now == .closed && by == notice.from && by != myself, "removed by the wrong member: \(what())")
            let expected: [UInt8]
            switch (role, before) {
            case (.initiator, .awaitingChallenge):
                expected = handshake.downProof(
                    down: myself, initiator: myself, responder: notice.from, initiatorNonce: myNonce,
                    responderNonce: notice.responderNonce)
            case (.responder, .awaitingProof(let peer, let theirNonce)):
                fuzzCheck(
                    notice.from == peer && notice.responderNonce == myNonce,
                    "a notice for another connection: \(what())")
                expected = handshake.downProof(
                    down: myself, initiator: peer, responder: myself, initiatorNonce: theirNonce,
                    responderNonce: myNonce)
            default:
                fuzzFailure("removed from the cluster out of turn: \(what())")
            }
            fuzzCheck(notice.proof == expected, "removed from the cluster on a wrong proof: \(what())")
            Reached.removed += 1
        }
    }

    /// A log reason built from peer text: printable ASCII (PeerText escapes the rest) and
    /// PeerText's ellipsis, of bounded length.
    static func checkLogText(_ reason: String, _ what: @autoclosure () -> String) {
        var count = 0
        for scalar in reason.unicodeScalars {
            count += 1
            fuzzCheck((" "..."~").contains(scalar) || scalar == "…", "unescaped peer text in a log reason: \(what())")
        }
        fuzzCheck(count <= 1024, "a log reason of \(count) characters: \(what())")
    }
}
