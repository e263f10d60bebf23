import NIOCore
import NIOEmbedded
import Synchronization
import Testing
import TroupeClusterMembership

@testable import TroupeCluster

/// `NIOFrameHandler` on an embedded channel: frames split across reads in every way arrive
/// whole and in order; a refused frame closes the connection and nothing after it is delivered.
@Suite("NIOFrameHandler: frames from a byte stream")
struct NIOFrameHandlerTests {
    final class Recorder: ClusterConnectionHandler, Sendable {
        let frames = Mutex<[[UInt8]]>([])
        let closes = Mutex<[String]>([])
        func received(_ frame: ByteBuffer, on connection: any ClusterConnection) {
            frames.withLock { $0.append(Array(frame.readableBytesView)) }
        }
        func closed(_ connection: any ClusterConnection, error: (any Error)?) {
            closes.withLock { $0.append(error.map { "\($0)" } ?? "no error") }
        }
    }

    private func connectedChannel(maximumFrameSize: Int = 1 << 20) throws -> (EmbeddedChannel, Recorder) {
        let channel = EmbeddedChannel()
        let connection = NIOClusterConnection(channel: channel, stopped: StoppedFlag(), frameLimit: maximumFrameSize)
        try channel.pipeline.syncOperations.addHandler(
            NIOFrameHandler(connection: connection))
        let recorder = Recorder()
        connection.start(recorder)
        channel.embeddedEventLoop.run()
        return (channel, recorder)
    }

    private func stream(of payloads: [[UInt8]]) -> ByteBuffer {
        var stream = ByteBuffer()
        for payload in payloads {
            stream.writeInteger(UInt32(payload.count), endianness: .big)
            stream.writeBytes(payload)
        }
        return stream
    }

    @Test func framesSplitAnyWayAcrossReadsArriveWholeAndInOrder() throws {
        let payloads = [2, 3, 100, 4_095, 4_096, 70_000, 2, 65_536, 17].enumerated().map { index, size in
            (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
        }
        let whole = stream(of: payloads)
        var generator = SplitMix(seed: 0xF7A3E)
        // One read with everything, reads of one byte at a time, then random splits.
        for chunking in 0..<12 {
            let (channel, recorder) = try connectedChannel()
            var rest = whole
            while rest.readableBytes > 0 {
                let size: Int
                switch chunking {
                case 0: size = rest.readableBytes
                case 1: size = 1
                default: size = 1 + Int(generator.next() % 9_000)
                }
                try channel.writeInbound(rest.readSlice(length: min(size, rest.readableBytes))!)
            }
            #expect(recorder.frames.withLock { $0 } == payloads, "chunking \(chunking)")
            #expect(try channel.finish().isClean)
        }
    }

    @Test func anOversizedOrTooShortFrameClosesTheConnectionAndNothingAfterItIsDelivered() throws {
        for bad in [UInt32(1_025), UInt32(1), UInt32.max] {
            let (channel, recorder) = try connectedChannel(maximumFrameSize: 1_024)
            var bytes = stream(of: [[1, 2, 3]])
            bytes.writeInteger(bad, endianness: .big)
            bytes.writeBytes([9, 9, 9, 9])
            var after = stream(of: [[7, 7]])  // a valid frame after the bad one: never delivered
            bytes.writeBuffer(&after)
            try channel.writeInbound(bytes)
            channel.embeddedEventLoop.run()
            #expect(recorder.frames.withLock { $0 } == [[1, 2, 3]])
            #expect(!channel.isActive)
            let closes = recorder.closes.withLock { $0 }
            #expect(closes.count == 1)
            #expect(closes.first.map { $0.contains("frame") } == true, "\(closes)")
            _ = try? channel.finish()
        }
    }
}
