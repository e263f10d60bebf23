import Testing
import TroupeClusterMembership

@testable import TroupeClusterEntities

@Suite struct EntityWireTests {
    let origin = ClusterNode(host: "127.0.0.1", port: 7337, uid: 0xfeed_f00d)

    var sample: EntityBatch {
        EntityBatch(
            sender: 0x1234_5678_9abc_def0,
            envelopes: [
                EntityEnvelope(key: "user-42", payload: [1, 2, 3]),
                EntityEnvelope(
                    key: "ünïcode", payload: [], request: "9Ledger7EntriesV", askID: 77, origin: origin, hops: 2),
                .signal(
                    HandoffSignal(
                        kind: .confirm, fingerprint: 0xabcd_ef01_2345_6789, member: 42,
                        incarnation: 0x0102_0304_0506_0708)),
            ],
            answers: [
                EntityAnswer(askID: 5, code: .value, payload: Array(repeating: 9, count: 300)),
                EntityAnswer(askID: 6, code: .noReply, payload: []),
            ])
    }

    @Test func aBatchSurvivesTheRoundTrip() throws {
        let decoded = try EntityWire.decodeBatch(EntityWire.encode(sample))
        #expect(decoded.sender == sample.sender)
        #expect(decoded.envelopes.map(\.key) == ["user-42", "ünïcode", ""])
        #expect(decoded.envelopes.map(\.payload) == [[1, 2, 3], [], []])
        #expect(decoded.envelopes.map(\.signal) == [nil, nil, sample.envelopes[2].signal])
        #expect(decoded.envelopes[1].request == "9Ledger7EntriesV" && decoded.envelopes[1].askID == 77)
        #expect(decoded.envelopes[1].origin == origin && decoded.envelopes[1].hops == 2)
        #expect(decoded.envelopes[0].origin == nil && decoded.envelopes[0].request == nil)
        #expect(decoded.answers.map(\.askID) == [5, 6])
        #expect(decoded.answers.map(\.code) == [.value, .noReply])
        #expect(decoded.answers[0].payload.count == 300)
        let envelope = try EntityWire.decodeEnvelope(EntityWire.encode(sample.envelopes[1]))
        #expect(envelope.key == "ünïcode" && envelope.origin == origin)
        let answer = try EntityWire.decodeAnswer(EntityWire.encode(sample.answers[0]))
        #expect(answer.askID == 5 && answer.payload == sample.answers[0].payload)
    }

    @Test func everyTruncationAndTrailingByteIsRefused() {
        let bytes = EntityWire.encode(sample)
        for length in 0..<bytes.count {
            #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeBatch(Array(bytes.prefix(length))) }
        }
        #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeBatch(bytes + [0]) }
    }

    @Test func countsAndLengthsBeyondTheBytesAreRefusedBeforeAnythingIsReserved() {
        // 2^32 - 1 envelopes announced in 16 bytes.
        #expect(throws: EntityWire.Malformed.self) {
            try EntityWire.decodeBatch([1, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 0])
        }
        // One envelope whose key claims 4 GiB.
        var writer = EntityWire.Writer()
        writer.u64(1)
        writer.u32(1)
        writer.u32(0)
        writer.u32(.max)
        writer.bytes += Array(repeating: 0, count: 20)
        #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeBatch(writer.bytes) }
    }

    @Test func inconsistentEnvelopesAndUnknownCodesAreRefused() {
        // A request with no ask number.
        var request = EntityEnvelope(key: "k", payload: [], request: "T", askID: 0, origin: origin)
        #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeEnvelope(EntityWire.encode(request)) }
        // A message that claims an ask number.
        request = EntityEnvelope(key: "k", payload: [], askID: 3)
        #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeEnvelope(EntityWire.encode(request)) }
        var answer = EntityWire.encode(EntityAnswer(askID: 1, code: .value, payload: []))
        answer[8] = 200
        #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeAnswer(answer) }
        // Flags with unknown bits.
        var flagged = EntityWire.encode(EntityEnvelope(key: "k", payload: []))
        flagged[9] = 0x80
        #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeEnvelope(flagged) }
        // A handoff signal of an unknown kind, and one that also names an entity.
        var signal = EntityWire.encode(
            EntityEnvelope.signal(HandoffSignal(kind: .marker, fingerprint: 1, member: 2, incarnation: 3)))
        #expect(throws: Never.self) { try EntityWire.decodeEnvelope(signal) }
        signal[4 + 4 + 1 + 8 + 1] = 9
        #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeEnvelope(signal) }
        var named = EntityEnvelope(key: "k", payload: [])
        named.signal = HandoffSignal(kind: .marker, fingerprint: 1, member: 2, incarnation: 3)
        #expect(throws: EntityWire.Malformed.self) { try EntityWire.decodeEnvelope(EntityWire.encode(named)) }
    }

    @Test func randomCorruptionNeverCrashesTheReader() {
        var generator = SplitMix(seed: 0x5eed)
        let bytes = EntityWire.encode(sample)
        var refused = 0
        for _ in 0..<20_000 {
            var corrupted = bytes
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                corrupted[Int(generator.next() % UInt64(corrupted.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            do {
                _ = try EntityWire.decodeBatch(corrupted)
            } catch {
                refused += 1
            }
        }
        // Most corruptions hit a length, a count, a flag or a code; some hit only payload bytes.
        #expect(refused > 1_000)
    }
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
