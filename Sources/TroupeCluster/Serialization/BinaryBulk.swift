import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Bulk values of ``BinaryClusterCoder``: byte strings (`[UInt8]`, `Data`, `ByteBuffer`) and
/// arrays of fixed-width numbers, written as one block of memory instead of one tagged value per
/// element (a 1 MiB `[UInt8]` was a million varints; now it is one copy each way).
///
/// The format: tag `9` (bytes), a varint byte count, the bytes; tag `10` (packed numbers), one
/// byte naming the element type (``Element``), a varint element count, then the elements
/// little-endian, back to back. Decoding checks the count against the bytes left before
/// anything is allocated, and a type that asks for its elements one by one (through an unkeyed
/// container) still gets them: the decoder expands a block into elements on request.
enum BinaryBulk {
    /// The element type of a packed array, as written on the wire.
    enum Element: UInt8, CaseIterable {
        case int8 = 1, int16, int32, int64, uint16, uint32, uint64, float, double

        var size: Int {
            switch self {
            case .int8: 1
            case .int16, .uint16: 2
            case .int32, .uint32, .float: 4
            case .int64, .uint64, .double: 8
            }
        }

        /// One element at `offset` of a little-endian block, as a scalar of the format.
        func value(in raw: UnsafeRawBufferPointer, at offset: Int) -> BinaryValue {
            // Safety: callers pass offsets below `count × size` of a block that holds exactly that many bytes
            // (`BinaryValue.read` checks it, `pack` makes it so); `loadUnaligned` needs no alignment.
            switch self {
            case .int8: .int(Int64(raw.loadUnaligned(fromByteOffset: offset, as: Int8.self)))
            case .int16: .int(Int64(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: Int16.self))))
            case .int32: .int(Int64(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: Int32.self))))
            case .int64: .int(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: Int64.self)))
            case .uint16:
                .uint(UInt64(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self))))
            case .uint32:
                .uint(UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))))
            case .uint64: .uint(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            case .float:
                .double(
                    Double(
                        Float(
                            bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                        )))
            case .double:
                .double(
                    Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                )
            }
        }
    }

    // MARK: Encoding

    /// `value` as one block if its type is a bulk type; nil otherwise. (`Int` and `UInt` are
    /// written as 64-bit elements: every platform Troupe runs on has 64-bit words.)
    @inline(__always)
    static func encode<Value: Encodable>(_ value: Value) -> BinaryValue? {
        if Value.self == [UInt8].self {
            return .bytes(ByteBuffer(bytes: _identityCast(value, to: [UInt8].self)))
        } else if Value.self == Data.self {
            return .bytes(ByteBuffer(bytes: _identityCast(value, to: Data.self)))
        } else if Value.self == ByteBuffer.self {
            return .bytes(_identityCast(value, to: ByteBuffer.self))
        }
        return packedValue(value)
    }

    /// Writes `value` straight into `buffer` if its type is a bulk type (one copy, no block in
    /// between); false otherwise.
    @inline(__always)
    static func write<Value: Encodable>(_ value: Value, into buffer: inout ByteBuffer) -> Bool {
        // Safety (the three closures): each pointer is used only inside its closure, to copy the bytes
        // into `buffer`; the type test before each `_identityCast` makes the cast an identity.
        if Value.self == [UInt8].self {
            _identityCast(value, to: [UInt8].self).withUnsafeBytes { writeBytes($0, into: &buffer) }
            return true
        } else if Value.self == Data.self {
            _identityCast(value, to: Data.self).withUnsafeBytes { writeBytes($0, into: &buffer) }
            return true
        } else if Value.self == ByteBuffer.self {
            _identityCast(value, to: ByteBuffer.self).withUnsafeReadableBytes { writeBytes($0, into: &buffer) }
            return true
        }
        guard let packed = packedValue(value) else { return false }
        packed.writeScalar(into: &buffer)
        return true
    }

    private static func writeBytes(_ bytes: UnsafeRawBufferPointer, into buffer: inout ByteBuffer) {
        buffer.writeVarint(UInt64(bytes.count), tag: BinaryValue.Tag.bytes.rawValue)
        buffer.writeBytes(bytes)
    }

    private static func packedValue<Value: Encodable>(_ value: Value) -> BinaryValue? {
        if Value.self == [Int].self {
            return pack(_identityCast(value, to: [Int].self).map { Int64($0) }, .int64)
        } else if Value.self == [Double].self {
            return pack(_identityCast(value, to: [Double].self).map(\.bitPattern), .double)
        } else if Value.self == [Int64].self {
            return pack(_identityCast(value, to: [Int64].self), .int64)
        } else if Value.self == [UInt64].self {
            return pack(_identityCast(value, to: [UInt64].self), .uint64)
        } else if Value.self == [Int32].self {
            return pack(_identityCast(value, to: [Int32].self), .int32)
        } else if Value.self == [UInt32].self {
            return pack(_identityCast(value, to: [UInt32].self), .uint32)
        } else if Value.self == [Float].self {
            return pack(_identityCast(value, to: [Float].self).map(\.bitPattern), .float)
        } else if Value.self == [UInt].self {
            return pack(_identityCast(value, to: [UInt].self).map { UInt64($0) }, .uint64)
        } else if Value.self == [Int16].self {
            return pack(_identityCast(value, to: [Int16].self), .int16)
        } else if Value.self == [UInt16].self {
            return pack(_identityCast(value, to: [UInt16].self), .uint16)
        } else if Value.self == [Int8].self {
            return pack(_identityCast(value, to: [Int8].self), .int8)
        }
        return nil
    }

    /// The elements' bytes, little-endian.
    private static func pack<E: FixedWidthInteger>(_ elements: [E], _ element: Element) -> BinaryValue {
        var block = ByteBuffer()
        block.reserveCapacity(elements.count * element.size)
        #if _endian(little)
            // Safety: the elements' bytes are only copied into `block` inside the closure.
            elements.withUnsafeBytes { _ = block.writeBytes($0) }
        #else
            for value in elements { block.writeInteger(value, endianness: .little) }
        #endif
        return .packed(element, count: elements.count, block)
    }

    // MARK: Decoding

    /// `Value` from a block, if `value` is one and `Value` the type it holds; nil if `value` is
    /// not a block (the caller decodes it as usual). Throws if the block holds another type.
    @inline(__always)
    static func decode<Value: Decodable>(_: Value.Type, from value: BinaryValue) throws -> Value? {
        switch value {
        case .bytes(let bytes):
            if Value.self == [UInt8].self { return _identityCast([UInt8](bytes.readableBytesView), to: Value.self) }
            if Value.self == Data.self { return _identityCast(Data(bytes.readableBytesView), to: Value.self) }
            if Value.self == ByteBuffer.self { return _identityCast(bytes, to: Value.self) }
            return nil
        case .packed(let element, let count, let block):
            return unpack(Value.self, element: element, count: count, block: block)
        default:
            return nil
        }
    }

    /// The packed block as `Value` when `Value` is the array type it was written from (or a
    /// wider one of the same signedness, as the element-wise path would accept); nil otherwise,
    /// and the caller expands the block into elements.
    private static func unpack<Value>(_: Value.Type, element: Element, count: Int, block: ByteBuffer) -> Value? {
        switch element {
        case .int64:
            if Value.self == [Int64].self { return _identityCast(unpack(Int64.self, count, block), to: Value.self) }
            if Value.self == [Int].self {
                return _identityCast(unpack(Int64.self, count, block).map { Int($0) }, to: Value.self)
            }
        case .uint64:
            if Value.self == [UInt64].self { return _identityCast(unpack(UInt64.self, count, block), to: Value.self) }
            if Value.self == [UInt].self {
                return _identityCast(unpack(UInt64.self, count, block).map { UInt($0) }, to: Value.self)
            }
        case .double:
            if Value.self == [Double].self {
                return _identityCast(unpack(UInt64.self, count, block).map { Double(bitPattern: $0) }, to: Value.self)
            }
        case .float:
            if Value.self == [Float].self {
                return _identityCast(unpack(UInt32.self, count, block).map { Float(bitPattern: $0) }, to: Value.self)
            }
        case .int32:
            if Value.self == [Int32].self { return _identityCast(unpack(Int32.self, count, block), to: Value.self) }
        case .uint32:
            if Value.self == [UInt32].self { return _identityCast(unpack(UInt32.self, count, block), to: Value.self) }
        case .int16:
            if Value.self == [Int16].self { return _identityCast(unpack(Int16.self, count, block), to: Value.self) }
        case .uint16:
            if Value.self == [UInt16].self { return _identityCast(unpack(UInt16.self, count, block), to: Value.self) }
        case .int8:
            if Value.self == [Int8].self { return _identityCast(unpack(Int8.self, count, block), to: Value.self) }
        }
        return nil
    }

    /// `count` little-endian elements from `block`, which holds exactly that many (checked when
    /// the block was read).
    private static func unpack<E: FixedWidthInteger>(_: E.Type, _ count: Int, _ block: ByteBuffer) -> [E] {
        // Safety: `block` holds exactly `count` elements of `E`'s size (checked when it was read, or made
        // by `pack`), so the copy fills the `count` elements the closure reports as initialised.
        block.withUnsafeReadableBytes { raw in
            [E](unsafeUninitializedCapacity: count) { elements, initialized in
                #if _endian(little)
                    UnsafeMutableRawBufferPointer(elements).copyMemory(from: raw)
                #else
                    for index in 0..<count {
                        elements[index] = E(
                            littleEndian: raw.loadUnaligned(fromByteOffset: index * E.bitWidth / 8, as: E.self))
                    }
                #endif
                initialized = count
            }
        }
    }

    /// A block as the elements an unkeyed container reads one by one (for a type that decodes
    /// its elements itself).
    static func elements(of value: BinaryValue) -> [BinaryValue]? {
        switch value {
        case .bytes(let bytes):
            return bytes.readableBytesView.map { .uint(UInt64($0)) }
        case .packed(let element, let count, let block):
            // Safety: `block` holds exactly `count × element.size` bytes, so every offset read is in bounds;
            // the pointer is used only inside the closure.
            return block.withUnsafeReadableBytes { raw in
                (0..<count).map { element.value(in: raw, at: $0 * element.size) }
            }
        default:
            return nil
        }
    }
}
