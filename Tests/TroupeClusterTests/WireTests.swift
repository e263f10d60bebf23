import NIOCore
import Testing
import TroupeClusterMembership

@testable import TroupeCluster

@Suite("Wire format: envelopes, frames and a fuzzed decoder")
struct WireTests {
    static let member = ClusterNode(host: "127.0.0.1", port: 7337, uid: 42)

    /// Computed, not stored: a global holding enum payloads hides their pointers from
    /// LeakSanitizer (Swift keeps tags in the pointers' spare bits), which reports them as leaks.
    static var samples: [WireEnvelope] {
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
            .membership(.ack(sequence: 1, target: member, gossip: [])),
            .membership(.ping(sequence: 2, gossip: [.init(member: member, status: .alive(incarnation: 0))])),
            .receptionist(.init(operation: .snapshot, entries: [.init(key: "k|T", actorNumber: 1)])),
            .watch(actorNumber: 1), .unwatch(actorNumber: 2), .terminated(actorNumber: 3), .leaving,
        ]
    }

    @Test func everyEnvelopeRoundTrips() throws {
        for envelope in Self.samples {
            let frame = envelope.frame()
            var decoder = FrameDecoder(maximumFrameSize: 1 << 20)
            var stream = frame
            let payload = try #require(try decoder.decode(buffer: &stream))
            #expect(stream.readableBytes == 0)
            #expect(try WireEnvelope.decode(payload) == envelope)
            // Calls and replies of values are written into a buffer of their exact bound.
            var bounded = false
            switch envelope {
            case .invocation: bounded = true
            case .reply(let reply): if case .value = reply.outcome { bounded = true }
            default: break
            }
            if bounded { #expect(frame.readableBytes <= envelope.frameCapacity, "\(envelope)") }
            // Calls and replies take a path of their own (one raw write): the same bytes as the
            // general writer's, behind the same length prefix.
            var general = ByteBuffer()
            general.writeInteger(UInt32(0), endianness: .big)
            envelope.write(into: &general)
            general.setInteger(UInt32(general.readableBytes - 4), at: 0, endianness: .big)
            #expect(frame == general, "\(envelope)")
        }
    }

    /// The cluster simulator counts traffic with `SWIMMessage.wireFrameSize`: it must be the
    /// size of the frame this module writes, for every kind, status and host length.
    @Test func theSimulatorsFrameSizeOfAMembershipMessageIsTheWrittenOne() {
        let hosts = ["", "10.0.0.1", "node-17.cluster.example", String(repeating: "h", count: 300)]
        let statuses: [ClusterMemberStatus] = [
            .alive(incarnation: 3), .suspect(incarnation: 1), .unreachable(incarnation: 9), .down,
        ]
        for (index, host) in hosts.enumerated() {
            let node = ClusterNode(host: host, port: 7_000 + index, uid: UInt64(index) &* 0x9E37)
            let gossip = (0..<index * 3).map { SWIMMessage.Gossip(member: node, status: statuses[$0 % statuses.count]) }
            for message in [
                SWIMMessage.ping(sequence: 1, gossip: gossip),
                .pingRequest(sequence: 2, target: node, gossip: gossip),
                .ack(sequence: .max, target: Self.member, gossip: gossip),
            ] {
                #expect(WireEnvelope.membership(message).frame().readableBytes == message.wireFrameSize)
            }
        }
    }

    @Test func framesOverTheMaximumAreRefusedBeforeTheyAreRead() throws {
        var decoder = FrameDecoder(maximumFrameSize: 1024)
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(1025), endianness: .big)
        #expect(throws: WireError.frameTooLarge(length: 1025, maximum: 1024)) { try decoder.decode(buffer: &buffer) }
        var short = ByteBuffer()
        short.writeInteger(UInt32(1), endianness: .big)
        short.writeInteger(UInt8(1))
        #expect(throws: WireError.self) { try decoder.decode(buffer: &short) }
        // A partial frame waits for the rest.
        var partial = WireEnvelope.leaving.frame()
        partial.moveWriterIndex(to: partial.writerIndex - 1)
        #expect(try decoder.decode(buffer: &partial) == nil)
    }

    @Test func stringsAreAcceptedExactlyWhenTheyAreValidUTF8() throws {
        for valid in [
            "", "a", "$s5cprof4EchoC4echoyS2SYaKFTE", "héllo wörld", "日本語", "🎭 troupe", "\u{FFFD}", "a\u{0}b",
        ] {
            #expect(ByteBuffer(string: valid).validUTF8String() == valid)
        }
        let invalid: [[UInt8]] = [
            [0xFF], [0xC0, 0x80], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x61, 0x80, 0x62],
            Array("ok".utf8) + [0xFE],
        ]
        for bytes in invalid {
            #expect(ByteBuffer(bytes: bytes).validUTF8String() == nil, "\(bytes)")
            // And an envelope carrying such a string is malformed.
            var frame = ByteBuffer()
            WireEnvelope.refused(.init(reason: "x")).writeFrame(into: &frame)
            let payload = frame.getSlice(at: 4, length: frame.readableBytes - 4)!
            // The version and kind, then the reason replaced by these bytes, then no notice.
            var edited = ByteBuffer(bytes: Array(payload.readableBytesView.prefix(2)))
            edited.writeInteger(UInt32(bytes.count), endianness: .big)
            edited.writeBytes(bytes)
            edited.writeInteger(UInt8(0))
            #expect(throws: WireError.self) { _ = try WireEnvelope.decode(edited) }
        }
    }

    @Test func versionsAndKindsAreChecked() {
        #expect(throws: WireError.unsupportedVersion(1)) { try WireEnvelope.decode(ByteBuffer(bytes: [1, 16])) }
        #expect(throws: WireError.unsupportedVersion(3)) { try WireEnvelope.decode(ByteBuffer(bytes: [3, 16])) }
        #expect(throws: WireError.unknownKind(99)) { try WireEnvelope.decode(ByteBuffer(bytes: [2, 99])) }
        #expect(throws: WireError.self) { try WireEnvelope.decode(ByteBuffer(bytes: [2, 17, 0])) }  // trailing byte
        #expect(throws: WireError.self) { try WireEnvelope.decode(ByteBuffer(bytes: [2, 14, 0, 0])) }  // truncated
    }

    /// The decoder is total: on random bytes, on valid envelopes with bytes flipped, cut or
    /// inserted, it decodes or throws `WireError`, never traps; and whatever it decodes
    /// re-encodes to exactly the bytes it came from (the format has one encoding per value).
    /// Async and yielding: a CPU-bound test that held one of Swift's two cooperative threads
    /// for its whole run starved other suites' tasks under the full suite's load.
    @Test func fuzzedInputsDecodeOrThrowAndNeverTrap() async throws {
        var generator = SplitMix(seed: UInt64(fuzzSeed))
        var decoded = 0
        var refused = 0
        let iterations = fuzzIterations
        let valid = Self.samples.map { envelope -> [UInt8] in
            var payload = envelope.frame()
            payload.moveReaderIndex(forwardBy: 4)
            return Array(payload.readableBytesView)
        }
        for iteration in 0..<iterations {
            if iteration % 256 == 0 { await Task.yield() }
            var bytes: [UInt8]
            if iteration % 4 == 0 {
                let length = Int(generator.next() % 96)
                bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                if bytes.count >= 2 && generator.next() % 2 == 0 {
                    bytes[0] = 1
                    bytes[1] = UInt8([1, 2, 3, 4, 10, 11, 12, 13, 14, 15, 16, 17][Int(generator.next() % 12)])
                }
            } else {
                bytes = valid[Int(generator.next() % UInt64(valid.count))]
                for _ in 0...(generator.next() % 4) {
                    guard !bytes.isEmpty else { break }
                    let position = Int(generator.next() % UInt64(bytes.count))
                    switch generator.next() % 4 {
                    case 0: bytes[position] ^= UInt8(truncatingIfNeeded: 1 << (generator.next() % 8))
                    case 1: bytes.removeSubrange(position...)
                    case 2: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                    default: bytes[position] = 0xFF
                    }
                }
            }
            do {
                let envelope = try WireEnvelope.decode(ByteBuffer(bytes: bytes))
                var again = ByteBuffer()
                envelope.write(into: &again)
                #expect(Array(again.readableBytesView) == bytes, "re-encoding differs for \(bytes)")
                decoded += 1
            } catch {
                refused += 1
            }
        }
        #expect(decoded + refused == iterations)
        #expect(decoded > 0 && refused > 0, "the generator exercised both outcomes")
    }
}

/// `TROUPE_FUZZ_ITERATIONS` and `TROUPE_FUZZ_SEED` tune the fuzz test (defaults: 100,000 and 1).
let fuzzIterations = Int(environment("TROUPE_FUZZ_ITERATIONS") ?? "") ?? 100_000
let fuzzSeed = Int(environment("TROUPE_FUZZ_SEED") ?? "") ?? 1

func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}

#if canImport(Glibc)
    import Glibc
#endif
