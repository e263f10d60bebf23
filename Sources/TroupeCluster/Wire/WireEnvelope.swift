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
enum WireEnvelope: Sendable, Equatable {
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

    struct Hello: Sendable, Equatable {
        let clusterName: String
        let from: ClusterNode
        let nonce: [UInt8]
    }

    struct Challenge: Sendable, Equatable {
        let from: ClusterNode
        let nonce: [UInt8]
        let proof: [UInt8]
    }

    struct Proof: Sendable, Equatable {
        let proof: [UInt8]
    }

    struct Refusal: Sendable, Equatable {
        /// Why, for the peer's log (a receiver treats it as untrusted text).
        let reason: String
        /// Present when the refusing node says that the cluster removed the peer.
        let downNotice: DownNotice?

        init(reason: String, downNotice: DownNotice? = nil) {
            self.reason = reason
            self.downNotice = downNotice
        }
    }

    /// "The cluster removed you", proved: an HMAC over both of this connection's nonces and
    /// both identities (``Handshake/downProof(down:initiator:responder:initiatorNonce:responderNonce:)``),
    /// so only a node that knows the secret can say it, and only on the connection it answers.
    struct DownNotice: Sendable, Equatable {
        /// The node that says it.
        let from: ClusterNode
        /// The responder's nonce (a responder refusing a hello has not sent one yet).
        let responderNonce: [UInt8]
        let proof: [UInt8]
    }

    struct Invocation: Sendable, Equatable {
        let callID: UInt64
        /// The recipient's node uid: an id from an earlier run of the node is unknown here.
        let recipientUID: UInt64
        let recipientNumber: UInt64
        let target: String
        let genericSubstitutions: [String]
        let arguments: [ByteBuffer]
    }

    struct Reply: Sendable, Equatable {
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

    struct ReceptionistUpdate: Sendable, Equatable {
        enum Operation: UInt8 {
            /// The sender's complete set of registrations (sent once an association is up).
            case snapshot = 1
            case checkIn, checkOut
        }
        let operation: Operation
        let entries: [Entry]

        struct Entry: Sendable, Hashable {
            let key: String
            let actorNumber: UInt64
        }
    }

    static let nonceLength = 32
    static let proofLength = 32
}

// MARK: - Encoding

extension WireEnvelope {
    /// Appends this envelope as one frame (length prefix included) to `buffer`.
    func writeFrame(into buffer: inout ByteBuffer) {
        if writeCallFrame(into: &buffer) { return }
        let lengthIndex = buffer.writerIndex
        buffer.writeInteger(UInt32(0), endianness: .big)
        write(into: &buffer)
        buffer.setInteger(UInt32(buffer.writerIndex - lengthIndex - 4), at: lengthIndex, endianness: .big)
    }

    /// Enough bytes for the frame of a call or a reply (so writing it never grows the buffer),
    /// 64 for the rest.
    var frameCapacity: Int {
        switch self {
        case .invocation(let invocation):
            var size = 40 + invocation.target.utf8.count
            for name in invocation.genericSubstitutions { size += 4 + name.utf8.count }
            for argument in invocation.arguments { size += 4 + argument.readableBytes }
            return size
        case .reply(let reply):
            if case .value(let bytes) = reply.outcome { return 24 + bytes.readableBytes }
            return 64
        default:
            return 64
        }
    }

    /// The frame of a call without generic substitutions, or of a reply with a value or none,
    /// in one write of raw bytes (the same bytes `write(into:)` makes): every separate write
    /// into a `ByteBuffer` checks its capacity and the exclusivity of its storage, and NIO's
    /// `writeMultipleIntegers` wrote its integers one at a time. False for the other envelopes.
    private func writeCallFrame(into buffer: inout ByteBuffer) -> Bool {
        switch self {
        case .invocation(let invocation) where invocation.genericSubstitutions.isEmpty:
            var target = invocation.target
            return target.withUTF8 { name in
                var size = 4 + 2 + 24 + 4 + name.count + 4
                for argument in invocation.arguments { size += 4 + argument.readableBytes }
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
                    var out = RawWriter(raw)
                    out.frameHeader(frameSize: size, kind: .invocation)
                    out.u64(invocation.callID)
                    out.u64(invocation.recipientUID)
                    out.u64(invocation.recipientNumber)
                    out.u32(UInt32(name.count))
                    out.bytes(UnsafeRawBufferPointer(name))
                    out.u16(0)
                    out.u16(UInt16(invocation.arguments.count))
                    for argument in invocation.arguments {
                        out.u32(UInt32(argument.readableBytes))
                        argument.withUnsafeReadableBytes { out.bytes($0) }
                    }
                    return out.written
                }
                return true
            }
        case .reply(let reply):
            switch reply.outcome {
            case .value(let bytes):
                let size = 4 + 2 + 8 + 1 + 4 + bytes.readableBytes
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { raw in
                    var out = RawWriter(raw)
                    out.frameHeader(frameSize: size, kind: .reply)
                    out.u64(reply.callID)
                    out.u8(0)
                    out.u32(UInt32(bytes.readableBytes))
                    bytes.withUnsafeReadableBytes { out.bytes($0) }
                    return out.written
                }
                return true
            case .void:
                buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 15) { raw in
                    var out = RawWriter(raw)
                    out.frameHeader(frameSize: 15, kind: .reply)
                    out.u64(reply.callID)
                    out.u8(1)
                    return out.written
                }
                return true
            case .failure:
                return false
            }
        default:
            return false
        }
    }

    func frame(allocator: ByteBufferAllocator = ByteBufferAllocator()) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: frameCapacity)
        writeFrame(into: &buffer)
        return buffer
    }

    func write(into buffer: inout ByteBuffer) {
        switch self {
        case .hello(let hello):
            buffer.writeHeader(.hello)
            buffer.writeWireString(hello.clusterName)
            buffer.writeMember(hello.from)
            buffer.writeBytes(hello.nonce)
        case .challenge(let challenge):
            buffer.writeHeader(.challenge)
            buffer.writeMember(challenge.from)
            buffer.writeBytes(challenge.nonce)
            buffer.writeBytes(challenge.proof)
        case .proof(let proof):
            buffer.writeHeader(.proof)
            buffer.writeBytes(proof.proof)
        case .refused(let refusal):
            buffer.writeHeader(.refused)
            buffer.writeWireString(refusal.reason)
            if let notice = refusal.downNotice {
                buffer.writeInteger(UInt8(1))
                buffer.writeMember(notice.from)
                buffer.writeBytes(notice.responderNonce)
                buffer.writeBytes(notice.proof)
            } else {
                buffer.writeInteger(UInt8(0))
            }
        case .invocation(let invocation):
            // The fixed fields in one write (see `ByteBuffer.writeVarint(_:tag:)` for why).
            buffer.writeMultipleIntegers(
                Self.version, Kind.invocation.rawValue, invocation.callID, invocation.recipientUID,
                invocation.recipientNumber, endianness: .big)
            buffer.writeWireString(invocation.target)
            if invocation.genericSubstitutions.isEmpty {
                buffer.writeMultipleIntegers(UInt16(0), UInt16(invocation.arguments.count), endianness: .big)
            } else {
                buffer.writeInteger(UInt16(invocation.genericSubstitutions.count), endianness: .big)
                for name in invocation.genericSubstitutions { buffer.writeWireString(name) }
                buffer.writeInteger(UInt16(invocation.arguments.count), endianness: .big)
            }
            for argument in invocation.arguments { buffer.writeWireBytes(argument) }
        case .reply(let reply):
            let outcome: UInt8
            switch reply.outcome {
            case .value: outcome = 0
            case .void: outcome = 1
            case .failure: outcome = 2
            }
            buffer.writeMultipleIntegers(Self.version, Kind.reply.rawValue, reply.callID, outcome, endianness: .big)
            switch reply.outcome {
            case .value(let bytes):
                buffer.writeWireBytes(bytes)
            case .void:
                break
            case .failure(let failure):
                buffer.writeInteger(failure.code.rawValue)
                buffer.writeWireString(failure.typeName)
                buffer.writeWireString(failure.message)
            }
        case .membership(let message):
            buffer.writeHeader(.membership)
            buffer.writeSWIM(message)
        case .receptionist(let update):
            buffer.writeHeader(.receptionist)
            buffer.writeInteger(update.operation.rawValue)
            buffer.writeInteger(UInt16(update.entries.count), endianness: .big)
            for entry in update.entries {
                buffer.writeWireString(entry.key)
                buffer.writeInteger(entry.actorNumber, endianness: .big)
            }
        case .watch(let number):
            buffer.writeHeader(.watch)
            buffer.writeInteger(number, endianness: .big)
        case .unwatch(let number):
            buffer.writeHeader(.unwatch)
            buffer.writeInteger(number, endianness: .big)
        case .terminated(let number):
            buffer.writeHeader(.terminated)
            buffer.writeInteger(number, endianness: .big)
        case .leaving:
            buffer.writeHeader(.leaving)
        }
    }
}

extension ByteBuffer {
    mutating func writeMember(_ member: ClusterNode) {
        writeWireString(member.host)
        writeInteger(UInt16(truncatingIfNeeded: member.port), endianness: .big)
        writeInteger(member.uid, endianness: .big)
    }

    mutating func writeSWIM(_ message: SWIMMessage) {
        let gossip: [SWIMMessage.Gossip]
        switch message {
        case .ping(let sequence, let items):
            writeInteger(UInt8(1))
            writeInteger(sequence, endianness: .big)
            gossip = items
        case .pingRequest(let sequence, let target, let items):
            writeInteger(UInt8(2))
            writeInteger(sequence, endianness: .big)
            writeMember(target)
            gossip = items
        case .ack(let sequence, let target, let items):
            writeInteger(UInt8(3))
            writeInteger(sequence, endianness: .big)
            writeMember(target)
            gossip = items
        }
        writeInteger(UInt16(gossip.count), endianness: .big)
        for item in gossip {
            writeMember(item.member)
            switch item.status {
            case .alive(let incarnation):
                writeInteger(UInt8(0))
                writeInteger(incarnation, endianness: .big)
            case .suspect(let incarnation):
                writeInteger(UInt8(1))
                writeInteger(incarnation, endianness: .big)
            case .unreachable(let incarnation):
                writeInteger(UInt8(2))
                writeInteger(incarnation, endianness: .big)
            case .down:
                writeInteger(UInt8(3))
            }
        }
    }
}

/// Big-endian integers and bytes stored one after another into memory that was reserved for
/// exactly them (the caller computed the size).
private struct RawWriter {
    let base: UnsafeMutableRawPointer
    private(set) var written = 0

    init(_ raw: UnsafeMutableRawBufferPointer) { base = raw.baseAddress! }

    /// A frame's length prefix (the frame's size less the prefix), the version and the kind.
    mutating func frameHeader(frameSize: Int, kind: WireEnvelope.Kind) {
        u32(UInt32(frameSize - 4))
        u8(WireEnvelope.version)
        u8(kind.rawValue)
    }

    mutating func u8(_ value: UInt8) {
        base.storeBytes(of: value, toByteOffset: written, as: UInt8.self)
        written += 1
    }
    mutating func u16(_ value: UInt16) {
        base.storeBytes(of: value.bigEndian, toByteOffset: written, as: UInt16.self)
        written += 2
    }
    mutating func u32(_ value: UInt32) {
        base.storeBytes(of: value.bigEndian, toByteOffset: written, as: UInt32.self)
        written += 4
    }
    mutating func u64(_ value: UInt64) {
        base.storeBytes(of: value.bigEndian, toByteOffset: written, as: UInt64.self)
        written += 8
    }
    mutating func bytes(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress else { return }
        (base + written).copyMemory(from: source, byteCount: bytes.count)
        written += bytes.count
    }
}

extension ByteBuffer {
    /// The version and the kind, in one write.
    fileprivate mutating func writeHeader(_ kind: WireEnvelope.Kind) {
        writeMultipleIntegers(WireEnvelope.version, kind.rawValue)
    }
}

// MARK: - Decoding

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
