import Foundation
import NIOCore
import Testing

@testable import TroupeCluster

private struct Samples: Codable, Equatable {
    var bytes: [UInt8]
    var data: Data
    var buffer: ByteBuffer
    var ints: [Int]
    var doubles: [Double]
    var floats: [Float]
    var int8s: [Int8]
    var int16s: [Int16]
    var int32s: [Int32]
    var int64s: [Int64]
    var uints: [UInt]
    var uint16s: [UInt16]
    var uint32s: [UInt32]
    var uint64s: [UInt64]
    var nested: [[UInt8]]
    var optionalBytes: [UInt8]?

    static func random(_ generator: inout some RandomNumberGenerator, size: Int) -> Samples {
        func many<T>(_ make: () -> T) -> [T] { (0..<size).map { _ in make() } }
        return Samples(
            bytes: many { UInt8.random(in: .min ... .max, using: &generator) },
            data: Data(many { UInt8.random(in: .min ... .max, using: &generator) }),
            buffer: ByteBuffer(bytes: many { UInt8.random(in: .min ... .max, using: &generator) }),
            ints: many { Int.random(in: .min ... .max, using: &generator) },
            doubles: many { Double.random(in: -1e300...1e300, using: &generator) } + [.infinity, -0.0],
            floats: many { Float.random(in: -1e30...1e30, using: &generator) },
            int8s: many { Int8.random(in: .min ... .max, using: &generator) },
            int16s: many { Int16.random(in: .min ... .max, using: &generator) },
            int32s: many { Int32.random(in: .min ... .max, using: &generator) },
            int64s: many { Int64.random(in: .min ... .max, using: &generator) },
            uints: many { UInt.random(in: .min ... .max, using: &generator) },
            uint16s: many { UInt16.random(in: .min ... .max, using: &generator) },
            uint32s: many { UInt32.random(in: .min ... .max, using: &generator) },
            uint64s: many { UInt64.random(in: .min ... .max, using: &generator) },
            nested: [[], [1, 2, 3], many { UInt8.random(in: .min ... .max, using: &generator) }],
            optionalBytes: size % 2 == 0 ? nil : [9, 8, 7])
    }
}

/// A type that decodes its elements one by one from an unkeyed container: it still reads a
/// block written by the bulk path.
private struct ElementWise: Decodable, Equatable {
    var values: [Int64]
    init(values: [Int64]) { self.values = values }
    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        values = []
        while !container.isAtEnd { values.append(try container.decode(Int64.self)) }
    }
}

@Suite("BinaryClusterCoder: bulk values as one block")
struct BinaryBulkTests {
    let coder = BinaryClusterCoder()

    func roundTrip<T: Codable & Equatable>(_ value: T) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        try coder.encode(value, into: &buffer)
        let decoded = try coder.decode(T.self, from: buffer, userInfo: [:])
        #expect(decoded == value)
        return buffer
    }

    @Test func everyBulkTypeRoundTripsAtTopLevelAndNested() throws {
        var generator = SystemRandomNumberGenerator()
        for size in [0, 1, 7, 1000] {
            let samples = Samples.random(&generator, size: size)
            _ = try roundTrip(samples)
            _ = try roundTrip(samples.bytes)
            _ = try roundTrip(samples.data)
            _ = try roundTrip(samples.buffer)
            _ = try roundTrip(samples.ints)
            _ = try roundTrip(samples.floats)
            _ = try roundTrip(samples.int8s)
            _ = try roundTrip(samples.uint64s)
            _ = try roundTrip([samples.bytes, samples.bytes])
        }
        // Doubles compare bit for bit (NaN included).
        var buffer = ByteBuffer()
        try coder.encode([Double.nan, .signalingNaN, -0.0], into: &buffer)
        let decoded = try coder.decode([Double].self, from: buffer, userInfo: [:])
        #expect(decoded.map(\.bitPattern) == [Double.nan, .signalingNaN, -0.0].map(\.bitPattern))
    }

    @Test func aMebibyteOfBytesIsOneBlock() throws {
        let bytes = [UInt8](repeating: 0xAB, count: 1 << 20)
        let buffer = try roundTrip(bytes)
        // Tag, a 3-byte varint count, the bytes: nothing per element.
        #expect(buffer.readableBytes == 1 + 3 + (1 << 20))
        #expect(buffer.getInteger(at: 0, as: UInt8.self) == BinaryValue.Tag.bytes.rawValue)
        let ints = try roundTrip([Int](0..<(1 << 17)))
        #expect(ints.readableBytes == 2 + 3 + 8 << 17)
        // Nested in a struct: the same block inside the keyed container.
        let nested = try roundTrip(["payload": bytes])
        #expect(nested.readableBytes < (1 << 20) + 32)
    }

    @Test func aBlockIsExpandedForATypeThatReadsElementByElement() throws {
        var buffer = ByteBuffer()
        try coder.encode([Int64(-5), 0, .max], into: &buffer)
        #expect(try coder.decode(ElementWise.self, from: buffer, userInfo: [:]) == ElementWise(values: [-5, 0, .max]))
        // Bytes read as [Int] through elements too (a wider element type).
        var bytes = ByteBuffer()
        try coder.encode([UInt8]([1, 2, 255]), into: &bytes)
        #expect(try coder.decode([Int].self, from: bytes, userInfo: [:]) == [1, 2, 255])
        // Elements written one by one (an older encoding) still decode as bulk types.
        var elementWise = ByteBuffer()
        let root = EncodedNode()
        root.content = .unkeyed([.scalar(.uint(1)), .scalar(.uint(2))])
        root.write(into: &elementWise)
        #expect(try coder.decode([UInt8].self, from: elementWise, userInfo: [:]) == [1, 2])
        #expect(try coder.decode(Data.self, from: elementWise, userInfo: [:]) == Data([1, 2]))
    }

    @Test func corruptBlocksAreErrorsNeverTraps() throws {
        func decodeBytes(_ raw: [UInt8]) throws -> [UInt8] {
            try coder.decode([UInt8].self, from: ByteBuffer(bytes: raw), userInfo: [:])
        }
        let bytesTag = BinaryValue.Tag.bytes.rawValue
        let packedTag = BinaryValue.Tag.packed.rawValue
        // A count past the data.
        #expect(throws: DecodingError.self) { try decodeBytes([bytesTag, 10, 1, 2]) }
        // A varint count of 2^63.
        #expect(throws: DecodingError.self) {
            try decodeBytes([bytesTag, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01])
        }
        // Packed: unknown element type, a count whose size overflows, a count past the data.
        #expect(throws: DecodingError.self) {
            try coder.decode([Int].self, from: ByteBuffer(bytes: [packedTag, 99, 0]), userInfo: [:])
        }
        #expect(throws: DecodingError.self) {
            try coder.decode(
                [Int].self,
                from: ByteBuffer(bytes: [packedTag, 4, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]),
                userInfo: [:])
        }
        #expect(throws: DecodingError.self) {
            try coder.decode([Int].self, from: ByteBuffer(bytes: [packedTag, 4, 2, 1, 2, 3]), userInfo: [:])
        }
        // A block of another type: a typed error, not a trap.
        var doubles = ByteBuffer()
        try coder.encode([1.5, 2.5], into: &doubles)
        #expect(throws: DecodingError.self) { try coder.decode([String].self, from: doubles, userInfo: [:]) }
        #expect(throws: DecodingError.self) { try coder.decode(String.self, from: doubles, userInfo: [:]) }
        // Random mutations of valid blocks decode or throw.
        var generator = SystemRandomNumberGenerator()
        var valid = ByteBuffer()
        try coder.encode(Samples.random(&generator, size: 5), into: &valid)
        let original = Array(valid.readableBytesView)
        for _ in 0..<5_000 {
            var mutated = original
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(
                    in: 0...255, using: &generator)
            }
            if Bool.random(using: &generator) {
                mutated.removeLast(Int.random(in: 0..<mutated.count, using: &generator))
            }
            _ = try? coder.decode(Samples.self, from: ByteBuffer(bytes: mutated), userInfo: [:])
        }
    }
}
