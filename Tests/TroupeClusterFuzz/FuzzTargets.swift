import NIOCore
import TroupeClusterMembership

@testable import TroupeCluster

#if canImport(Glibc)
    import Glibc
#endif

/// What one fuzz input exercises: its first byte, modulo the number of targets, picks one; the
/// rest is that target's input.
enum FuzzTarget: UInt8, CaseIterable {
    /// `FrameDecoder` on a byte stream split into reads as `NIOFrameHandler` splits it.
    case frames = 0
    /// `WireEnvelope.decode` on one frame's payload.
    case envelope
    /// `BinaryClusterCoder.decode` of one of several argument types.
    case coder
    /// `HandshakeStateMachine` fed decoded envelopes, with a secret the input cannot know.
    case handshakeUnknownSecret
    /// The same with a secret the corpus knows (so the fuzzer reaches the established state).
    case handshakeKnownSecret

    static func of(_ first: UInt8) -> FuzzTarget {
        FuzzTarget(rawValue: first % UInt8(allCases.count))!
    }
}

/// Runs one input. Returns normally when the code under test behaved (decoded, or refused with
/// its error); traps (`fatalError`, which libFuzzer reports as a crash) when a property fails.
func fuzzOne(_ input: UnsafeBufferPointer<UInt8>) {
    guard let first = input.first else { return }
    let rest = UnsafeBufferPointer(rebasing: input[1...])
    switch FuzzTarget.of(first) {
    case .frames: FrameFuzz.run(rest)
    case .envelope: EnvelopeFuzz.run(rest)
    case .coder: CoderFuzz.run(rest)
    case .handshakeUnknownSecret: HandshakeFuzz.run(rest, secretKnown: false)
    case .handshakeKnownSecret: HandshakeFuzz.run(rest, secretKnown: true)
    }
}

/// How far the inputs got, for the replay's summary (a corpus whose transcripts no longer
/// establish, after a change to the wire format, still replays without a crash: these counts
/// show it). Touched by the one thread that runs the inputs.
enum Reached {
    nonisolated(unsafe) static var envelopes = 0
    nonisolated(unsafe) static var values = 0
    nonisolated(unsafe) static var established = 0
    nonisolated(unsafe) static var delivered = 0
    nonisolated(unsafe) static var removed = 0

    static var summary: String {
        "reached: \(envelopes) envelopes decoded, \(values) argument values decoded, \(established) handshakes "
            + "established, \(delivered) envelopes delivered, \(removed) proved \"you are down\" accepted"
    }
}

/// A property of the code under test failed: a crash for libFuzzer, with the reason.
func fuzzFailure(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("fuzz property violated: \(message)", file: file, line: line)
}

@inline(__always)
func fuzzCheck(
    _ condition: Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition { fuzzFailure(message(), file: file, line: line) }
}

// MARK: - Frames

/// Input: one byte of frame limits (bits 0-2: the limit of the first frame, as before the
/// handshake; bits 3-5: the limit of the later ones), one byte of read size (0: the whole
/// stream in one read; n: n bytes per read, or more to make at most 64 reads), then the
/// stream. The stream is split into frames by the loop of `NIOFrameHandler.channelRead` (a
/// fresh `FrameDecoder` per frame, an incomplete frame kept and continued by the next read),
/// and the frames and the error are compared with a reference reading of the same bytes.
/// Every frame is also decoded as an envelope (``EnvelopeFuzz``).
enum FrameFuzz {
    static let limits = [2, 3, 16, 255, 4096, 65536, 1 << 20, Int(UInt32.max)]

    static func run(_ input: UnsafeBufferPointer<UInt8>) {
        guard input.count >= 2 else { return }
        let firstLimit = limits[Int(input[0] & 7)]
        let laterLimit = limits[Int((input[0] >> 3) & 7)]
        let stream = UnsafeBufferPointer(rebasing: input[2...])
        // At most 64 reads: byte-sized reads of a 64 KiB stream cost seconds per input.
        let readSize = input[1] == 0 ? stream.count : max(Int(input[1]), (stream.count + 63) / 64)

        // The reference: frames read one after the other, the length checked before the bytes
        // are waited for.
        var expectedFrames: [Range<Int>] = []
        var expectedError: WireError?
        var position = 0
        while stream.count - position >= 4 {
            let length =
                Int(stream[position]) << 24 | Int(stream[position + 1]) << 16 | Int(stream[position + 2]) << 8
                | Int(stream[position + 3])
            let limit = expectedFrames.isEmpty ? firstLimit : laterLimit
            if length > limit {
                expectedError = .frameTooLarge(length: length, maximum: limit)
                break
            }
            if length < 2 {
                expectedError = .malformed("short")
                break
            }
            guard stream.count - position - 4 >= length else { break }
            expectedFrames.append(position + 4..<position + 4 + length)
            position += 4 + length
        }

        // NIOFrameHandler's loop, one read at a time.
        var pending: ByteBuffer?
        var frames = 0
        var failure: WireError?
        var offset = 0
        reads: while offset < stream.count {
            let end = min(stream.count, offset + readSize)
            var read = ByteBuffer(bytes: UnsafeBufferPointer(rebasing: stream[offset..<end]))
            offset = end
            if var earlier = pending {
                pending = nil
                earlier.writeBuffer(&read)
                read = earlier
            }
            do {
                while true {
                    var decoder = FrameDecoder(maximumFrameSize: frames == 0 ? firstLimit : laterLimit)
                    guard let frame = try decoder.decode(buffer: &read) else { break }
                    fuzzCheck(frames < expectedFrames.count, "frame \(frames) that the reference does not see")
                    let range = expectedFrames[frames]
                    fuzzCheck(
                        same(frame, UnsafeBufferPointer(rebasing: stream[range])),
                        "frame \(frames) differs from bytes \(range) of the stream")
                    frames += 1
                    EnvelopeFuzz.check(frame)
                }
            } catch let error as WireError {
                failure = error
                break reads
            } catch {
                fuzzFailure("FrameDecoder threw \(error), not a WireError")
            }
            if read.readableBytes > 0 {
                var kept = ByteBuffer()
                kept.writeBuffer(&read)
                pending = kept
            }
        }

        fuzzCheck(frames == expectedFrames.count, "\(frames) frames, the reference sees \(expectedFrames.count)")
        switch (failure, expectedError) {
        case (nil, nil):
            // What is left is the start of a frame, kept for the next read.
            let left = pending ?? ByteBuffer()
            fuzzCheck(
                same(left, UnsafeBufferPointer(rebasing: stream[position...])),
                "\(left.readableBytes) bytes pending, the reference has \(stream.count - position)")
        case (.frameTooLarge(let length, let maximum)?, .frameTooLarge(let expectedLength, let expectedMaximum)?):
            fuzzCheck(
                length == expectedLength && maximum == expectedMaximum,
                "frameTooLarge(\(length), \(maximum)), the reference says (\(expectedLength), \(expectedMaximum))")
        case (.malformed?, .malformed?):
            break
        default:
            fuzzFailure(
                "FrameDecoder's error \(String(describing: failure)), "
                    + "the reference's \(String(describing: expectedError))")
        }
    }

    /// Whether the buffer's readable bytes are `bytes`.
    static func same(_ buffer: ByteBuffer, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        buffer.withUnsafeReadableBytes { readable in
            readable.count == bytes.count
                && (bytes.isEmpty || memcmp(readable.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
    }
}

// MARK: - Envelopes

/// Input: one frame's payload. It is decoded from a slice of a larger buffer, with other bytes
/// on both sides (as `FrameDecoder` hands a payload over). `decode` must return or throw its
/// `WireError` (typed: anything else does not compile), never trap; and an envelope it
/// returns must write back to exactly the payload (the format has one encoding per value),
/// through both writers, within `frameCapacity`, and decode again to itself.
enum EnvelopeFuzz {
    static func run(_ input: UnsafeBufferPointer<UInt8>) {
        var storage = ByteBuffer()
        storage.writeRepeatingByte(0xA5, count: 7)
        storage.writeBytes(input)
        storage.writeRepeatingByte(0x5A, count: 9)
        check(storage.getSlice(at: storage.readerIndex + 7, length: input.count)!)
    }

    /// The properties, for one payload.
    static func check(_ payload: ByteBuffer) {
        let envelope: WireEnvelope
        do {
            envelope = try WireEnvelope.decode(payload)
        } catch {
            return
        }
        Reached.envelopes += 1
        var written = ByteBuffer()
        envelope.write(into: &written)
        fuzzCheck(
            written == payload,
            "\(envelope.kindName) writes back \(written.readableBytes) bytes differently from the "
                + "\(payload.readableBytes) it was decoded from")

        let frame = envelope.frame()
        fuzzCheck(
            frame.getInteger(at: frame.readerIndex, endianness: .big, as: UInt32.self) == UInt32(payload.readableBytes),
            "the frame's length prefix is not the payload's length")
        let framed = frame.getSlice(at: frame.readerIndex + 4, length: frame.readableBytes - 4)!
        fuzzCheck(framed == payload, "\(envelope.kindName)'s frame differs from the general writer's bytes")
        // Calls and replies of a value are written into a buffer of their exact bound.
        var bounded = false
        switch envelope {
        case .invocation: bounded = true
        case .reply(let reply): if case .value = reply.outcome { bounded = true }
        default: break
        }
        if bounded {
            fuzzCheck(
                frame.readableBytes <= envelope.frameCapacity,
                "a frame of \(frame.readableBytes) bytes over its frameCapacity \(envelope.frameCapacity)")
        }
        let again = try? WireEnvelope.decode(framed)
        fuzzCheck(again == envelope, "\(envelope.kindName) does not decode again to itself")
    }
}
