import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A compact binary form of `Codable` values, the default ``ClusterCoder``: no text to format
/// or parse, integers as varints, keyed containers with their keys. Several times cheaper than
/// JSON per call (see the benchmarks), and as tolerant of added fields: a decoder skips keys it
/// does not ask for, and `decodeIfPresent` finds missing ones absent.
///
/// The format (one value, recursively): a tag byte, then
/// `0` nil; `1` false; `2` true; `3` a signed integer (zigzag varint); `4` an unsigned integer
/// (varint); `5` a Double (8 bytes, big-endian bits); `6` a string (varint byte count, UTF-8);
/// `7` an unkeyed container (varint count, values); `8` a keyed container (varint count, then
/// per entry a key as in `6` without its tag, and a value); `9` bytes (`[UInt8]`, `Data`,
/// `ByteBuffer`: varint count, the bytes); `10` an array of fixed-width numbers (`[Int]`,
/// `[Double]`, `[Float]`, `[Int8]` … `[UInt64]`: an element type byte, varint count, the
/// elements little-endian). Bulk values are copied as one block each way: a 1 MiB `[UInt8]`
/// costs about as much as a 1 MiB `String`.
///
/// Decoding untrusted bytes is safe: every read is bounds-checked, counts are checked against
/// the bytes left before anything is allocated, nesting is limited to
/// ``maximumDepth`` levels, and every failure is a `DecodingError`.
public struct BinaryClusterCoder: ClusterCoder {
    /// The deepest nesting of containers a decoded value may have.
    public static let maximumDepth = 256

    public init() {}

    public func encode<Value: Encodable>(_ value: Value, into buffer: inout ByteBuffer) throws {
        if Self.encodeScalar(value, into: &buffer) { return }
        if BinaryBulk.write(value, into: &buffer) { return }
        let root = EncodedNode()
        try value.encode(to: BinaryValueEncoder(node: root, codingPath: []))
        root.write(into: &buffer)
    }

    public func decode<Value: Decodable>(
        _ type: Value.Type, from buffer: ByteBuffer, userInfo: [CodingUserInfoKey: any Sendable]
    ) throws -> Value {
        try Self.decodeScalar(Value.self, from: buffer) {
            var reader = buffer
            let value = try BinaryValue.read(from: &reader, depth: 0)
            guard reader.readableBytes == 0 else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: [], debugDescription: "\(reader.readableBytes) bytes after the value"))
            }
            if let bulk = try BinaryBulk.decode(Value.self, from: value) { return bulk }
            return try Value(from: BinaryValueDecoder(value: value, codingPath: [], userInfo: userInfo))
        }
    }
}

// The most common argument and result types, written and read directly (the same bytes the
// `Encoder`/`Decoder` path makes, without its tree of nodes): a `String` call costs a few
// hundred nanoseconds less each way. Anything unexpected in the bytes takes the full path, which
// reports it.
extension BinaryClusterCoder {
    /// Writes `value` if it is a `String`, `Int`, `Bool` or `Double`; false otherwise.
    @inline(__always)
    static func encodeScalar<Value: Encodable>(_ value: Value, into buffer: inout ByteBuffer) -> Bool {
        // `_identityCast`: the type is known equal, so no dynamic cast is needed.
        let scalar: BinaryValue
        if Value.self == String.self {
            scalar = .string(_identityCast(value, to: String.self))
        } else if Value.self == Int.self {
            scalar = .int(Int64(_identityCast(value, to: Int.self)))
        } else if Value.self == Bool.self {
            scalar = .bool(_identityCast(value, to: Bool.self))
        } else if Value.self == Double.self {
            scalar = .double(_identityCast(value, to: Double.self))
        } else {
            return false
        }
        scalar.writeScalar(into: &buffer)
        return true
    }

    /// Reads a `String`, `Int`, `Bool` or `Double` that fills `buffer` exactly, straight from its
    /// bytes; for other types, and for bytes that are not exactly such a value, returns what
    /// `fullPath` returns (which explains any error).
    ///
    /// Returns `Value` itself rather than `Value?`: called from unspecialized generic code (the
    /// distributed runtime's argument decoding), an optional of a type parameter would have
    /// its metadata looked up on every call.
    @inline(__always)
    static func decodeScalar<Value: Decodable>(
        _: Value.Type, from buffer: ByteBuffer, orElse fullPath: () throws -> Value
    ) rethrows -> Value {
        if Value.self == String.self || Value.self == Int.self || Value.self == Bool.self
            || Value.self == Double.self, let scalar = BinaryValue.wholeScalar(in: buffer)
        {
            // `_identityCast`: each branch has checked that the types are equal.
            switch scalar {
            case .string(let string) where Value.self == String.self: return _identityCast(string, to: Value.self)
            case .int, .uint:
                if Value.self == Int.self, let integer = scalar.integer(as: Int.self) {
                    return _identityCast(integer, to: Value.self)
                }
            case .bool(let flag) where Value.self == Bool.self: return _identityCast(flag, to: Value.self)
            case .double(let number) where Value.self == Double.self: return _identityCast(number, to: Value.self)
            default: break
            }
        }
        return try fullPath()
    }
}

/// A decoded value of the binary format.
enum BinaryValue {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case unkeyed([BinaryValue])
    case keyed([(key: String, value: BinaryValue)])
    /// A byte string, as one block (see ``BinaryBulk``).
    case bytes(ByteBuffer)
    /// `count` fixed-width numbers, little-endian, as one block (see ``BinaryBulk``).
    case packed(BinaryBulk.Element, count: Int, ByteBuffer)

    enum Tag: UInt8 {
        case null = 0, `false`, `true`, int, uint, double, string, unkeyed, keyed, bytes, packed
    }

    var kindName: String {
        switch self {
        case .null: "nil"
        case .bool: "a Bool"
        case .int: "a signed integer"
        case .uint: "an unsigned integer"
        case .double: "a floating-point number"
        case .string: "a string"
        case .unkeyed: "an unkeyed container"
        case .keyed: "a keyed container"
        case .bytes: "a byte string"
        case .packed: "an array of numbers"
        }
    }

    /// Writes a value that is not a container: its tag, then its bytes. Both the `Encoder` and
    /// the direct path of ``BinaryClusterCoder`` write scalars here, so they make the same bytes.
    func writeScalar(into buffer: inout ByteBuffer) {
        switch self {
        case .null: buffer.writeInteger(Tag.null.rawValue)
        case .bool(let value): buffer.writeInteger((value ? Tag.true : .false).rawValue)
        case .int(let value):
            buffer.writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)), tag: Tag.int.rawValue)
        case .uint(let value): buffer.writeVarint(value, tag: Tag.uint.rawValue)
        case .double(let value):
            buffer.writeMultipleIntegers(Tag.double.rawValue, value.bitPattern, endianness: .big)
        case .string(let value): buffer.writeBinaryString(value, tag: Tag.string.rawValue)
        case .bytes(let bytes):
            buffer.writeVarint(UInt64(bytes.readableBytes), tag: Tag.bytes.rawValue)
            buffer.writeImmutableBuffer(bytes)
        case .packed(let element, let count, let block):
            buffer.writeMultipleIntegers(Tag.packed.rawValue, element.rawValue)
            buffer.writeVarint(UInt64(count))
            buffer.writeImmutableBuffer(block)
        case .unkeyed, .keyed:
            preconditionFailure("containers are encoded as nodes")
        }
    }

    /// The one scalar that fills `buffer` exactly, read straight from its bytes in one access;
    /// nil for a container, for anything malformed and for bytes left over (the full reader
    /// then says what is wrong). Reads what ``read(from:depth:)`` reads, as it reads it.
    static func wholeScalar(in buffer: ByteBuffer) -> BinaryValue? {
        // Safety: every read is checked against `raw.count` first (varints byte by byte, a Double and a
        // string by their length), and the pointer stays inside the closure.
        buffer.withUnsafeReadableBytes { raw -> BinaryValue? in
            guard let first = raw.first, let tag = Tag(rawValue: first) else { return nil }
            var index = 1
            let value: BinaryValue
            switch tag {
            case .null: value = .null
            case .false: value = .bool(false)
            case .true: value = .bool(true)
            case .int:
                guard let zigzag = loadVarint(raw, at: &index) else { return nil }
                value = .int(Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1))))
            case .uint:
                guard let integer = loadVarint(raw, at: &index) else { return nil }
                value = .uint(integer)
            case .double:
                guard raw.count - index >= 8 else { return nil }
                let bits = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                index += 8
                value = .double(Double(bitPattern: UInt64(bigEndian: bits)))
            case .string:
                guard let length = loadVarint(raw, at: &index), length <= UInt64(raw.count - index) else { return nil }
                let end = index + Int(length)
                value = .string(String(decoding: UnsafeRawBufferPointer(rebasing: raw[index..<end]), as: UTF8.self))
                index = end
            case .unkeyed, .keyed, .bytes, .packed:
                return nil
            }
            return index == raw.count ? value : nil
        }
    }

    /// A varint at `index` (moved past it), with ``read(from:depth:)``'s limits; nil if it is
    /// cut short or longer than 64 bits.
    private static func loadVarint(_ raw: UnsafeRawBufferPointer, at index: inout Int) -> UInt64? {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while index < raw.count {
            let byte = raw[index]
            index += 1
            guard shift < 64, shift < 63 || byte <= 1 else { return nil }
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        return nil
    }

    /// This value as a `Bool`, `String`, `Double` or `Float` (from a Double), if it is one;
    /// nil otherwise. Shared by the `Decoder` and the direct path of ``BinaryClusterCoder``.
    func scalar<T>(as _: T.Type) -> T? {
        // `_identityCast`: each case has checked that the types are equal.
        switch self {
        case .bool(let bool) where T.self == Bool.self: _identityCast(bool, to: T.self)
        case .string(let string) where T.self == String.self: _identityCast(string, to: T.self)
        case .double(let double) where T.self == Double.self: _identityCast(double, to: T.self)
        case .double(let double) where T.self == Float.self: _identityCast(Float(double), to: T.self)
        default: nil
        }
    }

    /// This value as `T` if it is an integer that fits exactly; nil otherwise (also for
    /// values that are not integers: ``isInteger`` tells the two apart).
    func integer<T: FixedWidthInteger>(as _: T.Type) -> T? {
        switch self {
        case .int(let int): T(exactly: int)
        case .uint(let uint): T(exactly: uint)
        default: nil
        }
    }

    var isInteger: Bool {
        switch self {
        case .int, .uint: true
        default: false
        }
    }

    static func read(from buffer: inout ByteBuffer, depth: Int) throws -> BinaryValue {
        guard let raw = buffer.readInteger(as: UInt8.self) else { throw corrupt("the value ends early") }
        guard let tag = Tag(rawValue: raw) else { throw corrupt("unknown tag \(raw)") }
        switch tag {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int:
            let zigzag = try readVarint(from: &buffer)
            return .int(Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1))))
        case .uint: return .uint(try readVarint(from: &buffer))
        case .double:
            guard let bits = buffer.readInteger(endianness: .big, as: UInt64.self) else {
                throw corrupt("a Double ends early")
            }
            return .double(Double(bitPattern: bits))
        case .string: return .string(try readString(from: &buffer))
        case .bytes:
            let length = try readVarint(from: &buffer)
            guard length <= UInt64(buffer.readableBytes), let bytes = buffer.readSlice(length: Int(length)) else {
                throw corrupt("a byte string of \(length) bytes beyond the data")
            }
            return .bytes(bytes)
        case .packed:
            guard let raw = buffer.readInteger(as: UInt8.self) else { throw corrupt("an array of numbers ends early") }
            guard let element = BinaryBulk.Element(rawValue: raw) else { throw corrupt("unknown number type \(raw)") }
            let count = try readVarint(from: &buffer)
            // Checked by division: count × size cannot overflow.
            guard count <= UInt64(buffer.readableBytes / element.size),
                let block = buffer.readSlice(length: Int(count) * element.size)
            else { throw corrupt("an array of \(count) numbers beyond the data") }
            return .packed(element, count: Int(count), block)
        case .unkeyed, .keyed:
            guard depth < BinaryClusterCoder.maximumDepth else {
                throw corrupt("containers nested deeper than \(BinaryClusterCoder.maximumDepth) levels")
            }
            let count = try readVarint(from: &buffer)
            // Every entry takes at least one byte (two for a keyed one): a count beyond the bytes
            // left is corrupt, and nothing is reserved for it.
            guard count <= UInt64(buffer.readableBytes) else { throw corrupt("a count of \(count) beyond the data") }
            if tag == .unkeyed {
                var values: [BinaryValue] = []
                values.reserveCapacity(Int(count))
                for _ in 0..<count { values.append(try read(from: &buffer, depth: depth + 1)) }
                return .unkeyed(values)
            }
            var entries: [(key: String, value: BinaryValue)] = []
            entries.reserveCapacity(Int(count))
            for _ in 0..<count {
                let key = try readString(from: &buffer)
                entries.append((key, try read(from: &buffer, depth: depth + 1)))
            }
            return .keyed(entries)
        }
    }

    private static func readVarint(from buffer: inout ByteBuffer) throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard let byte = buffer.readInteger(as: UInt8.self) else { throw corrupt("a varint ends early") }
            guard shift < 64, shift < 63 || byte <= 1 else { throw corrupt("a varint longer than 64 bits") }
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    private static func readString(from buffer: inout ByteBuffer) throws -> String {
        let length = try readVarint(from: &buffer)
        guard length <= UInt64(buffer.readableBytes) else {
            throw corrupt("a string of \(length) bytes beyond the data")
        }
        guard let string = buffer.readString(length: Int(length)) else { throw corrupt("a string ends early") }
        return string
    }

    static func corrupt(_ why: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "not a BinaryClusterCoder value: \(why)"))
    }
}

extension ByteBuffer {
    // Each of these is one write into the buffer: ByteBuffer checks its capacity and the
    // exclusivity of its storage on every write, which cost more than the bytes themselves when
    // a value was written a byte at a time.

    /// `value` as a varint (7 bits a byte, low first), after `tag` if there is one.
    mutating func writeVarint(_ value: UInt64, tag: UInt8? = nil) {
        // Safety: 11 bytes are reserved, the most a tag and a 64-bit varint take (1 + 10); the closure
        // writes no more and returns how many it wrote.
        writeWithUnsafeMutableBytes(minimumWritableBytes: 11) { raw in
            Self.storeTagAndVarint(tag, value, into: raw)
        }
    }

    /// `string`'s UTF-8 byte count as a varint, then the bytes, after `tag` if there is one.
    mutating func writeBinaryString(_ string: String, tag: UInt8? = nil) {
        var string = string
        // Safety: the tag, the varint (11 bytes at most) and the UTF-8 bytes fit the reserved room; the
        // string's bytes are copied inside both closures, and the count written is returned.
        _ = string.withUTF8 { utf8 in
            writeWithUnsafeMutableBytes(minimumWritableBytes: 11 + utf8.count) { raw in
                let index = Self.storeTagAndVarint(tag, UInt64(utf8.count), into: raw)
                if let base = utf8.baseAddress {
                    (raw.baseAddress! + index).copyMemory(from: base, byteCount: utf8.count)
                }
                return index + utf8.count
            }
        }
    }

    /// Stores `tag` (if any) and `value` as a varint (7 bits a byte, low first) at the start of
    /// `raw`, which has room for 11 bytes; returns how many it stored.
    private static func storeTagAndVarint(
        _ tag: UInt8?, _ value: UInt64, into raw: UnsafeMutableRawBufferPointer
    ) -> Int {
        var index = 0
        if let tag {
            raw[0] = tag
            index = 1
        }
        var value = value
        while value >= 0x80 {
            raw[index] = UInt8(truncatingIfNeeded: value) | 0x80
            index += 1
            value >>= 7
        }
        raw[index] = UInt8(value)
        return index + 1
    }
}
