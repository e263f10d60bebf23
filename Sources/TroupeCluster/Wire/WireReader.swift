import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Bounds-checked reads from an envelope's bytes: every read that would run past the end, and
/// every count or length beyond its limit, throws ``WireError/malformed(_:)`` instead.
struct WireReader {
    var buffer: ByteBuffer

    /// The longest string an envelope may carry (host names, type names, target identifiers,
    /// receptionist keys, error messages).
    static let maximumStringLength = 16 * 1024
    /// The most items of one list (generic substitutions, arguments, gossip, registrations).
    static let maximumCount = 4096

    /// The version and kind bytes; a payload of one byte is a truncated kind, as before.
    mutating func header() throws -> (version: UInt8, kind: UInt8) {
        if let header = buffer.readMultipleIntegers(as: (UInt8, UInt8).self) { return header }
        // Fewer than two bytes: say which is missing.
        let version = try u8("version")
        return (version, try u8("kind"))
    }

    /// Three big-endian `UInt64`s in one read.
    mutating func threeU64(_ what: StaticString) throws -> (UInt64, UInt64, UInt64) {
        guard let values = buffer.readMultipleIntegers(endianness: .big, as: (UInt64, UInt64, UInt64).self) else {
            throw WireError.malformed("truncated \(what)")
        }
        return values
    }

    /// A big-endian integer; a frame that ends first is malformed (`what` names the field).
    mutating func integer<Value: FixedWidthInteger>(_ what: StaticString) throws -> Value {
        guard let value = buffer.readInteger(endianness: .big, as: Value.self) else {
            throw WireError.malformed("truncated \(what)")
        }
        return value
    }

    mutating func u8(_ what: StaticString) throws -> UInt8 { try integer(what) }
    mutating func u16(_ what: StaticString) throws -> UInt16 { try integer(what) }
    mutating func u32(_ what: StaticString) throws -> UInt32 { try integer(what) }
    mutating func u64(_ what: StaticString) throws -> UInt64 { try integer(what) }

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
        guard let string = bytes.validUTF8String() else { throw WireError.malformed("\(what) is not UTF-8") }
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
    /// The readable bytes as a `String` if they are valid UTF-8, nil otherwise.
    ///
    /// Decoded through the standard library's fast path for contiguous bytes (which repairs
    /// invalid sequences), then compared with the input: equal exactly when the input was valid.
    /// `String(validating:as:)` gives the same answer, but its generic validation looked type
    /// metadata up on every call (a mangled target name per received call: 2–3 % of the
    /// receiving event loop's time at 64 calls in flight).
    func validUTF8String() -> String? {
        withUnsafeReadableBytes { raw -> String? in
            var string = String(decoding: raw, as: UTF8.self)
            let unchanged = string.withUTF8 { decoded in
                decoded.count == raw.count
                    && (raw.isEmpty || memcmp(decoded.baseAddress!, raw.baseAddress!, raw.count) == 0)
            }
            return unchanged ? string : nil
        }
    }

    /// A `UInt32` byte count, then the UTF-8 bytes, in one write (see
    /// `ByteBuffer.writeVarint(_:tag:)` for why one).
    mutating func writeWireString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in writeWireBytes(UnsafeRawBufferPointer(utf8)) }
    }

    /// A `UInt32` byte count, then the bytes.
    mutating func writeWireBytes(_ bytes: ByteBuffer) {
        bytes.withUnsafeReadableBytes { writeWireBytes($0) }
    }

    private mutating func writeWireBytes(_ bytes: UnsafeRawBufferPointer) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: 4 + bytes.count) { raw in
            raw.storeBytes(of: UInt32(bytes.count).bigEndian, toByteOffset: 0, as: UInt32.self)
            if let source = bytes.baseAddress {
                (raw.baseAddress! + 4).copyMemory(from: source, byteCount: bytes.count)
            }
            return 4 + bytes.count
        }
    }
}
