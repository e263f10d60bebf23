import Testing
import TroupeClusterMembership

@testable import TroupeCluster

/// The handshake's state machine, envelope by envelope in every state: what it accepts, what it
/// refuses, and that nothing said before the proof reaches anything but the connection.
struct HandshakeStateMachineTests {
    static let secret = "handshake-test-secret-0123456789"
    let alice = ClusterNode(host: "127.0.0.1", port: 7001, uid: 11)
    let bob = ClusterNode(host: "127.0.0.1", port: 7002, uid: 22)
    let mallory = ClusterNode(host: "127.0.0.9", port: 7009, uid: 99)
    let handshake = Handshake(secret: Self.secret, clusterName: "test")
    let wrongHandshake = Handshake(secret: "not-the-secret-at-all-0123456789", clusterName: "test")
    let nonceA = [UInt8](repeating: 1, count: WireEnvelope.nonceLength)
    let nonceB = [UInt8](repeating: 2, count: WireEnvelope.nonceLength)

    func initiator(_ handshake: Handshake? = nil) -> HandshakeStateMachine {
        HandshakeStateMachine(role: .initiator, myself: alice, handshake: handshake ?? self.handshake, nonce: nonceA)
    }
    func responder(_ handshake: Handshake? = nil) -> HandshakeStateMachine {
        HandshakeStateMachine(role: .responder, myself: bob, handshake: handshake ?? self.handshake, nonce: nonceB)
    }
    static func nobodyDown(_: ClusterNode) -> Bool { false }

    /// Every envelope kind that is not part of the handshake.
    var associationEnvelopes: [WireEnvelope] {
        [
            .invocation(
                .init(
                    callID: 1, recipientUID: 22, recipientNumber: 1, target: "t", genericSubstitutions: [],
                    arguments: [])),
            .reply(.init(callID: 1, outcome: .void)),
            .membership(.ping(sequence: 1, gossip: [.init(member: bob, status: .down)])),
            .receptionist(.init(operation: .snapshot, entries: [])),
            .watch(actorNumber: 1), .unwatch(actorNumber: 1), .terminated(actorNumber: 1), .leaving,
        ]
    }

    /// Runs a full handshake between the two machines and returns both, established.
    func handshakeBoth() -> (HandshakeStateMachine, HandshakeStateMachine) {
        var a = initiator()
        var b = responder()
        let hello = a.start()!
        guard case .send(let challenge) = b.receive(hello, isDown: Self.nobodyDown) else {
            Issue.record("no challenge")
            return (a, b)
        }
        guard case .establish(let peerOfA, let proof?) = a.receive(challenge, isDown: Self.nobodyDown) else {
            Issue.record("initiator did not establish")
            return (a, b)
        }
        #expect(peerOfA == bob)
        #expect(b.receive(proof, isDown: Self.nobodyDown) == .establish(peer: alice, then: nil))
        return (a, b)
    }

    @Test func bothSidesEstablishWithTheRightSecretAndDeliverAfterwards() {
        var (a, b) = handshakeBoth()
        #expect(a.state == .established(peer: bob))
        #expect(b.state == .established(peer: alice))
        for envelope in associationEnvelopes {
            #expect(a.receive(envelope, isDown: Self.nobodyDown) == .deliver(envelope, from: bob))
            #expect(b.receive(envelope, isDown: Self.nobodyDown) == .deliver(envelope, from: alice))
        }
    }

    @Test func handshakeEnvelopesAfterTheHandshakeAreViolations() {
        for late in [
            WireEnvelope.hello(.init(clusterName: "test", from: mallory, nonce: nonceA)),
            .proof(.init(proof: [UInt8](repeating: 0, count: 32))),
            .refused(.init(reason: "late")),
        ] {
            var (a, _) = handshakeBoth()
            guard case .violation = a.receive(late, isDown: Self.nobodyDown) else {
                Issue.record("\(late.kindName) after the handshake was not a violation")
                continue
            }
            #expect(a.state == .closed)
            #expect(a.receive(.leaving, isDown: Self.nobodyDown) == .ignore)
        }
    }

    @Test func beforeTheProofOnlyHandshakeEnvelopesAreAccepted() {
        // Responder awaiting hello, initiator awaiting challenge, responder awaiting proof:
        // every association envelope closes the connection, and nothing is delivered.
        for envelope in associationEnvelopes {
            var b = responder()
            guard case .violation = b.receive(envelope, isDown: Self.nobodyDown) else {
                Issue.record("responder accepted \(envelope.kindName) before hello")
                continue
            }
            #expect(b.state == .closed)

            var a = initiator()
            _ = a.start()
            guard case .violation = a.receive(envelope, isDown: Self.nobodyDown) else {
                Issue.record("initiator accepted \(envelope.kindName) before the challenge")
                continue
            }

            var waiting = responder()
            _ = waiting.receive(
                .hello(.init(clusterName: "test", from: mallory, nonce: nonceA)), isDown: Self.nobodyDown)
            guard case .violation = waiting.receive(envelope, isDown: Self.nobodyDown) else {
                Issue.record("responder accepted \(envelope.kindName) before the proof")
                continue
            }
        }
    }

    @Test func aRefusalWithoutProofClosesOnlyTheConnectionInEveryState() {
        // The attack seen: hello, then refused(youAreDown) with no secret anywhere.
        let unproved = WireEnvelope.refused(
            .init(
                reason: "you are down\nFAKE LOG LINE",
                downNotice: .init(
                    from: mallory, responderNonce: nonceB, proof: [UInt8](repeating: 7, count: 32))))
        var b = responder()
        _ = b.receive(.hello(.init(clusterName: "test", from: mallory, nonce: nonceA)), isDown: Self.nobodyDown)
        guard case .violation(let reason) = b.receive(unproved, isDown: Self.nobodyDown) else {
            Issue.record("responder honoured an unproved down notice")
            return
        }
        #expect(!reason.contains("\n"), "the peer's text reaches the log escaped")
        #expect(b.state == .closed)

        var a = initiator()
        _ = a.start()
        guard case .violation = a.receive(unproved, isDown: Self.nobodyDown) else {
            Issue.record("initiator honoured an unproved down notice")
            return
        }
        // A plain refusal (no notice) only closes.
        var plain = initiator()
        _ = plain.start()
        guard case .close = plain.receive(.refused(.init(reason: "no")), isDown: Self.nobodyDown) else {
            Issue.record("a plain refusal did more than close")
            return
        }
        // A notice proved with the wrong secret is not honoured either.
        var forged = initiator()
        let hello = forged.start()!
        var wrongResponder = responder(wrongHandshake)
        guard case .refuse(let refusal, _) = wrongResponder.receive(hello, isDown: { _ in true }) else {
            Issue.record("no refusal")
            return
        }
        #expect(refusal.downNotice != nil)
        guard case .violation = forged.receive(.refused(refusal), isDown: Self.nobodyDown) else {
            Issue.record("a notice proved with another secret was honoured")
            return
        }
    }

    @Test func aProvedDownNoticeIsHonouredInBothRoles() {
        // The responder holds the initiator down: it refuses the hello with a proved notice.
        var a = initiator()
        let hello = a.start()!
        var b = responder()
        guard case .refuse(let refusal, _) = b.receive(hello, isDown: { $0 == alice }) else {
            Issue.record("the responder did not refuse a down node")
            return
        }
        #expect(
            a.receive(.refused(refusal), isDown: Self.nobodyDown)
                == .removedFromCluster(by: bob, reason: "\(PeerText(refusal.reason))"))

        // The initiator holds the responder down: it refuses the challenge with a proved notice.
        var a2 = initiator()
        var b2 = responder()
        guard case .send(let challenge) = b2.receive(a2.start()!, isDown: Self.nobodyDown),
            case .refuse(let refusal2, _) = a2.receive(challenge, isDown: { $0 == bob })
        else {
            Issue.record("the initiator did not refuse a down node")
            return
        }
        guard case .removedFromCluster(let by, _) = b2.receive(.refused(refusal2), isDown: Self.nobodyDown) else {
            Issue.record("the responder did not honour a proved notice")
            return
        }
        #expect(by == alice)
    }

    @Test func aCapturedDownNoticeIsUselessOnAnotherConnection() {
        let a = initiator()
        var b = responder()
        guard case .refuse(let captured, _) = b.receive(a.start()!, isDown: { $0 == alice }) else {
            Issue.record("no refusal")
            return
        }
        // Replayed to the same node on a new connection (a fresh nonce).
        var again = HandshakeStateMachine(
            role: .initiator, myself: alice, handshake: handshake,
            nonce: [UInt8](repeating: 3, count: WireEnvelope.nonceLength))
        _ = again.start()
        guard case .violation = again.receive(.refused(captured), isDown: Self.nobodyDown) else {
            Issue.record("a replayed notice was honoured")
            return
        }
        // Reflected: the responder's own notice sent back to it.
        var reflected = responder()
        _ = reflected.receive(.hello(.init(clusterName: "test", from: alice, nonce: nonceA)), isDown: Self.nobodyDown)
        guard case .violation = reflected.receive(.refused(captured), isDown: Self.nobodyDown) else {
            Issue.record("a reflected notice was honoured")
            return
        }
    }

    @Test func wrongProofsAndWrongClusterAreRefused() {
        // A responder that does not know the secret.
        var a = initiator()
        var stranger = responder(wrongHandshake)
        guard case .send(let challenge) = stranger.receive(a.start()!, isDown: Self.nobodyDown) else {
            Issue.record("no challenge")
            return
        }
        guard case .refuse(let refusal, _) = a.receive(challenge, isDown: Self.nobodyDown) else {
            Issue.record("a wrong responder proof was accepted")
            return
        }
        #expect(refusal.downNotice == nil)
        #expect(a.peer == nil)

        // An initiator that does not know the secret.
        var b = responder()
        var intruder = initiator(wrongHandshake)
        guard case .send(let challenge2) = b.receive(intruder.start()!, isDown: Self.nobodyDown) else {
            Issue.record("no challenge")
            return
        }
        // The intruder cannot check the challenge, so it sends a made-up proof.
        _ = intruder.receive(challenge2, isDown: Self.nobodyDown)
        guard case .refuse = b.receive(.proof(.init(proof: [UInt8](repeating: 0, count: 32))), isDown: Self.nobodyDown)
        else {
            Issue.record("a made-up proof was accepted")
            return
        }
        #expect(b.peer == nil)

        // A replayed proof from an earlier handshake (the responder's nonce differs).
        let (_, _) = handshakeBoth()
        var fresh = HandshakeStateMachine(
            role: .responder, myself: bob, handshake: handshake,
            nonce: [UInt8](repeating: 4, count: WireEnvelope.nonceLength))
        _ = fresh.receive(.hello(.init(clusterName: "test", from: alice, nonce: nonceA)), isDown: Self.nobodyDown)
        let oldProof = handshake.initiatorProof(
            initiator: alice, responder: bob, initiatorNonce: nonceA, responderNonce: nonceB)
        guard case .refuse = fresh.receive(.proof(.init(proof: oldProof)), isDown: Self.nobodyDown) else {
            Issue.record("a replayed proof was accepted")
            return
        }

        // Another cluster's name: refused, and the reply does not echo a long name.
        var named = responder()
        let longName = String(repeating: "x", count: 16 * 1024) + "\n"
        guard
            case .refuse(let nameRefusal, let log) = named.receive(
                .hello(.init(clusterName: longName, from: alice, nonce: nonceA)), isDown: Self.nobodyDown)
        else {
            Issue.record("another cluster's name was accepted")
            return
        }
        #expect(nameRefusal.reason.utf8.count < 200)
        #expect(log.utf8.count < 300)
        #expect(!log.contains("\n"))

        // Itself.
        var me = responder()
        guard
            case .refuse = me.receive(
                .hello(.init(clusterName: "test", from: bob, nonce: nonceA)), isDown: Self.nobodyDown)
        else {
            Issue.record("a node accepted itself")
            return
        }
    }

    @Test func peerTextEscapesAndTruncates() {
        #expect(PeerText("a\nb\"c\\").description == #"a\nb\"c\\"#)
        #expect(PeerText("é\u{1B}[31m").description == #"\u{e9}\u{1b}[31m"#)
        let long = PeerText(String(repeating: "y", count: 1000)).description
        #expect(long.hasPrefix(String(repeating: "y", count: 64)))
        #expect(long.hasSuffix("…(1000 characters)"))
    }
}
