import NIOCore
import TroupeClusterMembership

// Encoding: an envelope written as one frame, with the fast paths for calls and replies.

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
            // Safety: `withUTF8` on a local copy; its pointer (`name`) is used only inside the closure.
            return target.withUTF8 { name in
                var size = 4 + 2 + 24 + 4 + name.count + 4
                for argument in invocation.arguments { size += 4 + argument.readableBytes }
                // Safety: `size` counts exactly what is written below (header 6, three u64s, name length and
                // bytes, two u16s, each argument's length and bytes), so `out` stays inside the reserved room.
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
                        // Safety: the argument's bytes are only copied out inside the closure.
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
                // Safety: `size` counts exactly what is written below (header 6, u64, u8, u32, the value's bytes),
                // so `out` stays inside the reserved room; the value's bytes are only copied inside the closure.
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
                // Safety: 15 bytes reserved, exactly what is written below (header 6, u64, u8).
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

    // Safety: a `RawWriter` is made only inside `writeWithUnsafeMutableBytes` with at least one byte
    // reserved, so the base address exists; it does not outlive that closure.
    init(_ raw: UnsafeMutableRawBufferPointer) { base = raw.baseAddress! }

    /// A frame's length prefix (the frame's size less the prefix), the version and the kind.
    mutating func frameHeader(frameSize: Int, kind: WireEnvelope.Kind) {
        u32(UInt32(frameSize - 4))
        u8(WireEnvelope.version)
        u8(kind.rawValue)
    }

    // Safety (`u8` through `bytes`): every caller reserved exactly the bytes it writes (see
    // `writeCallFrame`), so `written` stays in bounds; `storeBytes` needs no alignment.
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
