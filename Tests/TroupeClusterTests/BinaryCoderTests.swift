import Foundation
import NIOCore
import Testing
import TroupeClusterMembership

@testable import TroupeCluster

private struct Everything: Codable, Equatable {
    var bool = true
    var int = Int.min
    var int8 = Int8.min
    var int16 = Int16.max
    var int32 = Int32.min
    var int64 = Int64.max
    var uint = UInt.max
    var uint8 = UInt8.max
    var uint16 = UInt16(12345)
    var uint32 = UInt32.max
    var uint64 = UInt64.max
    var double = -1.5e300
    var float = Float(3.25)
    var string = "héllo, 世界 👋"
    var empty = ""
    var optional: Int? = nil
    var present: String? = "here"
    var list = [1, 2, 3]
    var nested = [[String]](arrayLiteral: ["a"], [], ["b", "c"])
    var map = ["one": 1, "two": 2]
    var intKeys = [7: "seven", -1: "minus one"]
    var data = Data([0, 1, 2, 255])
    var date = Date(timeIntervalSince1970: 1_700_000_000.5)
    var uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
    var shape = Shape.rectangle(width: 2, height: 3)
    var shapes: [Shape] = [.circle(radius: 1), .point]
}

private enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rectangle(width: Int, height: Int)
    case point
}

private class Base: Codable {
    var name = "base"
}

private final class Derived: Base {
    var extra = 42
    private enum CodingKeys: String, CodingKey { case extra }
    override init() { super.init() }
    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        extra = try container.decode(Int.self, forKey: .extra)
        try super.init(from: container.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(extra, forKey: .extra)
        try super.encode(to: container.superEncoder())
    }
}

private struct Version1: Codable, Equatable { var id: Int; var name: String }
private struct Version2: Codable, Equatable { var id: Int; var name: String; var email: String? }

@Suite("BinaryClusterCoder: Codable in a compact binary form")
struct BinaryCoderTests {
    let coder = BinaryClusterCoder()

    private func roundTrip<Value: Codable>(_ value: Value) throws -> Value {
        var buffer = ByteBuffer()
        try coder.encode(value, into: &buffer)
        return try coder.decode(Value.self, from: buffer, userInfo: [:])
    }

    private func bytes<Value: Encodable>(_ value: Value) throws -> ByteBuffer {
        var buffer = ByteBuffer()
        try coder.encode(value, into: &buffer)
        return buffer
    }

    @Test func everyKindOfValueComesBackEqual() throws {
        #expect(try roundTrip(Everything()) == Everything())
        #expect(try roundTrip(Double.nan).isNaN)
        #expect(try roundTrip(-Double.infinity) == -.infinity)
        #expect(try roundTrip(Optional<Int>.none) == nil)
        #expect(try roundTrip([Int?]([1, nil, 3])) == [1, nil, 3])
        #expect(try roundTrip("x") == "x")
        let derived = try roundTrip(Derived())
        #expect(derived.extra == 42 && derived.name == "base")
    }

    /// Wraps a value so the coder takes its `Encoder`/`Decoder` path for it (a single-value
    /// container), not the direct path it has for the common scalars.
    private struct ThroughContainer<Value: Codable>: Codable {
        var value: Value
        init(_ value: Value) { self.value = value }
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Value.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    private func sameBytesBothWays<Value: Codable & Equatable>(_ value: Value) throws {
        let direct = try bytes(value)
        let general = try bytes(ThroughContainer(value))
        #expect(direct == general, "\(Value.self) \(value)")
        #expect(try coder.decode(Value.self, from: general, userInfo: [:]) == value)
        #expect(try coder.decode(ThroughContainer<Value>.self, from: direct, userInfo: [:]).value == value)
    }

    @Test func directScalarsMatchTheContainerPath() throws {
        for string in ["", "x", "héllo, 世界 👋", String(repeating: "a", count: 70_000)] { try sameBytesBothWays(string) }
        for int in [0, 1, -1, 63, -64, 64, 300, Int.max, Int.min] { try sameBytesBothWays(int) }
        for flag in [true, false] { try sameBytesBothWays(flag) }
        for number in [0.0, -1.5e300, .infinity, .leastNonzeroMagnitude] { try sameBytesBothWays(number) }
        // An unsigned integer in range decodes as Int; one out of range is the full path's error.
        #expect(try coder.decode(Int.self, from: bytes(UInt64(5)), userInfo: [:]) == 5)
        #expect {
            try coder.decode(Int.self, from: bytes(UInt64.max), userInfo: [:])
        } throws: { error in
            guard case DecodingError.dataCorrupted = error else { return false }
            return true
        }
        // Trailing bytes after a scalar are refused, as for any value.
        var trailing = try bytes("x")
        trailing.writeInteger(UInt8(0))
        #expect(throws: DecodingError.self) { try coder.decode(String.self, from: trailing, userInfo: [:]) }
    }

    /// The direct path reads scalars straight from the bytes; on any input, valid or not, it
    /// must give what the container path gives: the same value, or (through the container path
    /// it falls back to) an error.
    @Test func directScalarsDecodeWhatTheContainerPathDecodes() throws {
        var generator = SplitMix(seed: 0x5CA1_A125)
        let seeds: [[UInt8]] = try [
            bytes(""), bytes("héllo 👋"), bytes(String(repeating: "z", count: 200)), bytes(0), bytes(-1),
            bytes(Int.max), bytes(Int.min), bytes(UInt64.max), bytes(true), bytes(false), bytes(2.5),
            bytes(-Double.infinity), bytes(["a"]),
        ].map { Array($0.readableBytesView) }
        // Doubles are compared by their bits (NaN is not equal to itself).
        func agree<Value: Codable, Key: Equatable>(_: Value.Type, _ raw: [UInt8], by key: (Value) -> Key) {
            let buffer = ByteBuffer(bytes: raw)
            let direct = (try? coder.decode(Value.self, from: buffer, userInfo: [:])).map(key)
            let general = (try? coder.decode(ThroughContainer<Value>.self, from: buffer, userInfo: [:]))
                .map { key($0.value) }
            #expect(direct == general, "\(Value.self) from \(raw)")
        }
        for iteration in 0..<20_000 {
            var raw: [UInt8]
            if iteration.isMultiple(of: 3) {
                raw = (0..<Int(generator.next() % 12)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
                if !raw.isEmpty { raw[0] %= 10 }  // mostly known tags
            } else {
                raw = seeds[Int(generator.next() % UInt64(seeds.count))]
                for _ in 0..<(1 + Int(generator.next() % 3)) where !raw.isEmpty {
                    let position = Int(generator.next() % UInt64(raw.count))
                    switch generator.next() % 3 {
                    case 0: raw[position] = UInt8(truncatingIfNeeded: generator.next())
                    case 1: raw.removeSubrange(position...)
                    default: raw.append(UInt8(truncatingIfNeeded: generator.next()))
                    }
                }
            }
            agree(String.self, raw) { $0 }
            agree(Int.self, raw) { $0 }
            agree(Bool.self, raw) { $0 }
            agree(Double.self, raw) { $0.bitPattern }
        }
    }

    @Test func itIsSmallerThanJSON() throws {
        var json = ByteBuffer()
        try JSONClusterCoder().encode(Everything(), into: &json)
        let binary = try bytes(Everything())
        #expect(binary.readableBytes < json.readableBytes)
        #expect(try bytes(7).readableBytes == 2, "a small integer is a tag and one byte")
    }

    @Test func addedAndMissingOptionalFieldsAreTolerated() throws {
        let newer = try coder.decode(
            Version1.self, from: bytes(Version2(id: 1, name: "Ada", email: "ada@example.com")), userInfo: [:])
        #expect(newer == Version1(id: 1, name: "Ada"))
        let older = try coder.decode(Version2.self, from: bytes(Version1(id: 2, name: "Bo")), userInfo: [:])
        #expect(older == Version2(id: 2, name: "Bo", email: nil))
    }

    @Test func wrongTypesAndOutOfRangeNumbersAreDecodingErrors() throws {
        #expect {
            try coder.decode(Int.self, from: bytes("seven"), userInfo: [:])
        } throws: { error in
            guard case DecodingError.typeMismatch = error else { return false }
            return "\(error)".contains("found a string")
        }
        #expect {
            try coder.decode(UInt8.self, from: bytes(300), userInfo: [:])
        } throws: { error in
            guard case DecodingError.dataCorrupted = error else { return false }
            return true
        }
        #expect {
            try coder.decode(UInt.self, from: bytes(-1), userInfo: [:])
        } throws: { error in
            guard case DecodingError.dataCorrupted = error else { return false }
            return true
        }
        #expect {
            try coder.decode(Version1.self, from: bytes(["id": 1]), userInfo: [:])
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return false }
            return key.stringValue == "name"
        }
        #expect {
            try coder.decode(String.self, from: bytes(Optional<String>.none), userInfo: [:])
        } throws: { error in
            guard case DecodingError.valueNotFound = error else { return false }
            return true
        }
    }

    @Test func malformedBytesAreDecodingErrors() throws {
        func decodeRaw(_ raw: [UInt8]) throws -> Everything {
            try coder.decode(Everything.self, from: ByteBuffer(bytes: raw), userInfo: [:])
        }
        let valid = Array(try bytes(Everything()).readableBytesView)
        // Every truncation of a valid value, an unknown tag, trailing bytes.
        for length in 0..<valid.count {
            #expect(throws: DecodingError.self) { try decodeRaw(Array(valid.prefix(length))) }
        }
        #expect(throws: DecodingError.self) { try decodeRaw([99]) }
        #expect(throws: DecodingError.self) { try decodeRaw(valid + [0]) }
        // A count far beyond the data: refused before anything is reserved.
        #expect(throws: DecodingError.self) { try decodeRaw([7, 0xff, 0xff, 0xff, 0xff, 0x0f]) }
        // A varint longer than 64 bits.
        #expect(throws: DecodingError.self) { try decodeRaw([3] + Array(repeating: 0xff, count: 11)) }
        // Nesting beyond the limit: an error, not a stack overflow.
        var deep: [UInt8] = []
        for _ in 0..<100_000 { deep += [7, 1] }
        deep.append(0)
        #expect {
            try coder.decode([Int].self, from: ByteBuffer(bytes: deep), userInfo: [:])
        } throws: { error in
            "\(error)".contains("nested deeper than \(BinaryClusterCoder.maximumDepth)")
        }
    }

    @Test func randomAndMutatedBytesNeverCrashTheDecoder() async throws {
        var generator = SplitMix(seed: 0x5EED_B1A5)
        let valid = Array(try bytes(Everything()).readableBytesView)
        var decodedSome = 0
        for iteration in 0..<20_000 {
            var raw: [UInt8]
            if iteration.isMultiple(of: 2) {
                raw = (0..<Int(generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            } else {
                raw = valid
                for _ in 0..<(1 + Int(generator.next() % 4)) {
                    raw[Int(generator.next() % UInt64(raw.count))] = UInt8(truncatingIfNeeded: generator.next())
                }
            }
            do {
                let value = try coder.decode(Everything.self, from: ByteBuffer(bytes: raw), userInfo: [:])
                // Whatever decodes must survive its own round trip.
                #expect(try roundTrip(value) == value || value.double.isNaN)
                decodedSome += 1
            } catch is DecodingError {
                // The expected outcome for most inputs.
            }
            if iteration.isMultiple(of: 1_000) { await Task.yield() }
        }
        #expect(decodedSome > 0, "some mutations (in a string's bytes, a number) still decode")
    }
}
