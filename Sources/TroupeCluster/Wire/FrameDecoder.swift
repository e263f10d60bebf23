import NIOCore

/// Splits the byte stream into frames: `[UInt32 length, big-endian][length bytes]`, and
/// refuses a length over `maximumFrameSize` (or under the two bytes every envelope has)
/// before reading it, so a peer cannot make the node buffer more than one maximum frame.
///
/// Event loop only (a NIO handler). Errors reach the pipeline, which closes the connection.
struct FrameDecoder: NIOSingleStepByteToMessageDecoder {
    typealias InboundOut = ByteBuffer
    let maximumFrameSize: Int

    mutating func decode(buffer: inout ByteBuffer) throws -> ByteBuffer? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return nil
        }
        let size = Int(length)
        guard size <= maximumFrameSize else { throw WireError.frameTooLarge(length: size, maximum: maximumFrameSize) }
        guard size >= 2 else { throw WireError.malformed("frame of \(size) bytes is shorter than any envelope") }
        guard buffer.readableBytes >= 4 + size else { return nil }
        buffer.moveReaderIndex(forwardBy: 4)
        return buffer.readSlice(length: size)
    }

    mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> ByteBuffer? {
        try decode(buffer: &buffer)
    }
}
