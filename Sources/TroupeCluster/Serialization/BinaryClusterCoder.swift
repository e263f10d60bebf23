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
/// per entry a key as in `6` without its tag, and a value).
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
        let root = EncodedNode()
        try value.encode(to: BinaryValueEncoder(node: root, codingPath: []))
        root.write(into: &buffer)
    }

    public func decode<Value: Decodable>(
        _ type: Value.Type, from buffer: ByteBuffer, userInfo: [CodingUserInfoKey: any Sendable]
    ) throws -> Value {
        if let value = Self.decodeScalar(Value.self, from: buffer) { return value }
        var reader = buffer
        let value = try BinaryValue.read(from: &reader, depth: 0)
        guard reader.readableBytes == 0 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "\(reader.readableBytes) bytes after the value"))
        }
        return try Value(from: BinaryValueDecoder(value: value, codingPath: [], userInfo: userInfo))
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
        let scalar: BinaryValue
        if Value.self == String.self {
            scalar = .string(value as! String)
        } else if Value.self == Int.self {
            scalar = .int(Int64(value as! Int))
        } else if Value.self == Bool.self {
            scalar = .bool(value as! Bool)
        } else if Value.self == Double.self {
            scalar = .double(value as! Double)
        } else {
            return false
        }
        scalar.writeScalar(into: &buffer)
        return true
    }

    /// Reads a `String`, `Int`, `Bool` or `Double` that fills `buffer` exactly; nil for other
    /// types and for bytes that are not exactly such a value (the full path then explains).
    @inline(__always)
    static func decodeScalar<Value: Decodable>(_: Value.Type, from buffer: ByteBuffer) -> Value? {
        guard
            Value.self == String.self || Value.self == Int.self || Value.self == Bool.self
                || Value.self == Double.self
        else { return nil }
        var reader = buffer
        guard let value = try? BinaryValue.read(from: &reader, depth: BinaryClusterCoder.maximumDepth),
            reader.readableBytes == 0
        else { return nil }
        if Value.self == Int.self { return value.integer(as: Int.self).map { $0 as! Value } }
        return value.scalar(as: Value.self)
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

    enum Tag: UInt8 {
        case null = 0, `false`, `true`, int, uint, double, string, unkeyed, keyed
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
        }
    }

    /// Writes a value that is not a container: its tag, then its bytes. Both the `Encoder` and
    /// the direct path of ``BinaryClusterCoder`` write scalars here, so they make the same bytes.
    func writeScalar(into buffer: inout ByteBuffer) {
        switch self {
        case .null: buffer.writeInteger(Tag.null.rawValue)
        case .bool(let value): buffer.writeInteger((value ? Tag.true : .false).rawValue)
        case .int(let value):
            buffer.writeInteger(Tag.int.rawValue)
            buffer.writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
        case .uint(let value):
            buffer.writeInteger(Tag.uint.rawValue)
            buffer.writeVarint(value)
        case .double(let value):
            buffer.writeInteger(Tag.double.rawValue)
            buffer.writeInteger(value.bitPattern, endianness: .big)
        case .string(let value):
            buffer.writeInteger(Tag.string.rawValue)
            buffer.writeBinaryString(value)
        case .unkeyed, .keyed:
            preconditionFailure("containers are encoded as nodes")
        }
    }

    /// This value as a `Bool`, `String`, `Double` or `Float` (from a Double), if it is one;
    /// nil otherwise. Shared by the `Decoder` and the direct path of ``BinaryClusterCoder``.
    func scalar<T>(as _: T.Type) -> T? {
        switch self {
        case .bool(let bool) where T.self == Bool.self: bool as? T
        case .string(let string) where T.self == String.self: string as? T
        case .double(let double) where T.self == Double.self: double as? T
        case .double(let double) where T.self == Float.self: Float(double) as? T
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
    mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            writeInteger(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        writeInteger(UInt8(value))
    }

    mutating func writeBinaryString(_ string: String) {
        writeVarint(UInt64(string.utf8.count))
        writeString(string)
    }
}
