import NIOCore

/// Bounds-checked reads from an envelope's bytes: every read that would run past the end, and
/// every count or length beyond its limit, throws ``WireError/malformed(_:)`` instead.
struct WireReader {
    var buffer: ByteBuffer

    /// The longest string an envelope may carry (host names, type names, target identifiers,
    /// receptionist keys, error messages).
    static let maximumStringLength = 16 * 1024
    /// The most items of one list (generic substitutions, arguments, gossip, registrations).
    static let maximumCount = 4096

    mutating func u8(_ what: StaticString) throws -> UInt8 {
        guard let value = buffer.readInteger(as: UInt8.self) else { throw WireError.malformed("truncated \(what)") }
        return value
    }

    mutating func u16(_ what: StaticString) throws -> UInt16 {
        guard let value = buffer.readInteger(endianness: .big, as: UInt16.self) else {
            throw WireError.malformed("truncated \(what)")
        }
        return value
    }

    mutating func u32(_ what: StaticString) throws -> UInt32 {
        guard let value = buffer.readInteger(endianness: .big, as: UInt32.self) else {
            throw WireError.malformed("truncated \(what)")
        }
        return value
    }

    mutating func u64(_ what: StaticString) throws -> UInt64 {
        guard let value = buffer.readInteger(endianness: .big, as: UInt64.self) else {
            throw WireError.malformed("truncated \(what)")
        }
        return value
    }

    mutating func count(_ what: StaticString) throws -> Int {
        let count = Int(try u16(what))
        guard count <= Self.maximumCount else { throw WireError.malformed("\(what) count \(count) over the limit") }
        return count
    }

    mutating func string(_ what: StaticString) throws -> String {
        let length = Int(try u32(what))
        guard length <= Self.maximumStringLength else {
            throw WireError.malformed("\(what) of \(length) bytes over the limit")
        }
        guard let bytes = buffer.readSlice(length: length) else { throw WireError.malformed("truncated \(what)") }
        guard let string = String(validating: bytes.readableBytesView, as: UTF8.self) else {
            throw WireError.malformed("\(what) is not UTF-8")
        }
        return string
    }

    /// A length-prefixed slice (no copy).
    mutating func bytes(_ what: StaticString) throws -> ByteBuffer {
        let length = Int(try u32(what))
        guard let bytes = buffer.readSlice(length: length) else { throw WireError.malformed("truncated \(what)") }
        return bytes
    }

    /// Exactly `length` bytes.
    mutating func fixed(_ length: Int, _ what: StaticString) throws -> [UInt8] {
        guard let bytes = buffer.readBytes(length: length) else { throw WireError.malformed("truncated \(what)") }
        return bytes
    }

    func expectEnd(_ what: StaticString) throws {
        guard buffer.readableBytes == 0 else {
            throw WireError.malformed("\(buffer.readableBytes) bytes left over after \(what)")
        }
    }
}

extension ByteBuffer {
    mutating func writeWireString(_ string: String) {
        let lengthIndex = writerIndex
        writeInteger(UInt32(0), endianness: .big)
        let written = writeString(string)
        setInteger(UInt32(written), at: lengthIndex, endianness: .big)
    }

    mutating func writeWireBytes(_ bytes: ByteBuffer) {
        writeInteger(UInt32(bytes.readableBytes), endianness: .big)
        writeImmutableBuffer(bytes)
    }
}
