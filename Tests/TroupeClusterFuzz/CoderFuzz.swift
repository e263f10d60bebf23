import NIOCore
import TroupeClusterMembership

@testable import TroupeCluster

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Input: one byte picking the type (modulo ``cases``' count), then the argument's bytes, as a
/// remote call's argument arrives. `BinaryClusterCoder().decode` must return or throw, never
/// trap. When it returns a value:
/// - the value encodes, and what it encodes to decodes again to a value that encodes the same
///   (compared as canonical trees: dictionaries' order varies between instances);
/// - the direct paths (the whole-scalar path of `String`, `Int`, `Bool`, `Double`; the bulk
///   path of byte strings and number arrays) agree with the `Decoder` path, which decodes the
///   same bytes as a nested value would be decoded.
enum CoderFuzz {
    struct Case: Sendable {
        let name: String
        let fuzz: @Sendable (ByteBuffer) -> Void
        let seeds: @Sendable () -> [ByteBuffer]

        init<Value: Codable & SendableMetatype>(_: Value.Type, _ samples: @escaping @Sendable () -> [Value]) {
            name = "\(Value.self)"
            fuzz = { CoderFuzz.roundTrip(Value.self, $0) }
            seeds = { samples().map { CoderFuzz.encode($0) } }
        }
    }

    /// The argument types: their index is the input's second byte. Append new ones at the end
    /// (the corpus's inputs name them by index).
    static let cases: [Case] = [
        Case(String.self) { ["", "Ada", "héllo, 世界 👋", String(repeating: "x", count: 200)] },
        Case(Int.self) { [0, 1, -1, 300, .max, .min] },
        Case(Bool.self) { [true, false] },
        Case(Double.self) { [0, -0.0, 1.5, -1.5e300, .infinity, .nan, .leastNonzeroMagnitude] },
        Case([UInt8].self) { [[], [0, 1, 2, 255], [UInt8](repeating: 7, count: 300)] },
        Case([Int].self) { [[], [1, 2, 3], [.min, .max, 0]] },
        Case([Double].self) { [[], [0.5, -2, .infinity, .nan]] },
        Case(Data.self) { [Data(), Data([0, 1, 2, 255])] },
        Case([String].self) { [[], ["a", "", "ü"]] },
        Case([String: Int].self) { [[:], ["one": 1, "two": 2, "": -1]] },
        Case([Int: String].self) { [[:], [7: "seven", -1: "minus one", 0: ""]] },
        Case(FuzzShape.self) { FuzzShape.samples },
        Case(FuzzRecord.self) { [FuzzRecord.sample, FuzzRecord.minimal] },
        Case([FuzzRecord].self) { [[], [FuzzRecord.minimal, FuzzRecord.sample]] },
        Case([Float].self) { [[], [1.25, -0.0, .nan]] },
        Case([Int8].self) { [[], [-128, 0, 127]] },
        Case([UInt16].self) { [[], [0, 1, 65535]] },
        Case(UInt64.self) { [0, .max] },
        Case(Int8.self) { [-128, 127] },
        Case(Float.self) { [1.5, -.infinity] },
        Case(ClusterNode.self) { [ClusterNode(host: "10.0.0.1", port: 7001, uid: 11)] },
        Case(FuzzRecord?.self) { [nil, FuzzRecord.minimal] },
        Case(Date.self) { [Date(timeIntervalSince1970: 1_700_000_000.5)] },
        Case(UUID.self) { [UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))] },
        Case(ByteBuffer.self) { [ByteBuffer(), ByteBuffer(bytes: [1, 2, 3])] },
        Case([[String: [Int?]]].self) { [[["a": [1, nil, 3]], [:]]] },
    ]

    static func run(_ input: UnsafeBufferPointer<UInt8>) {
        guard let selector = input.first else { return }
        let kind = cases[Int(selector) % cases.count]
        kind.fuzz(ByteBuffer(bytes: UnsafeBufferPointer(rebasing: input[1...])))
    }

    static func encode<Value: Encodable>(_ value: Value) -> ByteBuffer {
        var buffer = ByteBuffer()
        do {
            try BinaryClusterCoder().encode(value, into: &buffer)
        } catch {
            fuzzFailure("encoding a \(Value.self) failed: \(error)")
        }
        return buffer
    }

    static func roundTrip<Value: Codable>(_: Value.Type, _ bytes: ByteBuffer) {
        let coder = BinaryClusterCoder()
        let decoded = try? coder.decode(Value.self, from: bytes, userInfo: [:])

        // The Decoder path: what a nested value of this type would go through (bulk values
        // first, then `init(from:)`), without the top level's whole-scalar shortcut.
        var reader = bytes
        let general: Value?
        if let tree = try? BinaryValue.read(from: &reader, depth: 0), reader.readableBytes == 0 {
            let decoder = BinaryValueDecoder(value: tree, codingPath: [], userInfo: [:])
            general = try? SingleValueBinaryDecoding(decoder: decoder).decode(Value.self)
        } else {
            general = nil
        }
        fuzzCheck(
            (decoded == nil) == (general == nil),
            "decode(\(Value.self)) \(decoded == nil ? "failed" : "succeeded"), "
                + "the Decoder path \(general == nil ? "failed" : "succeeded")")
        guard let decoded, let general else { return }
        Reached.values += 1

        let first = encode(decoded)
        fuzzCheck(
            canonical(first) == canonical(encode(general)),
            "decode(\(Value.self)) and the Decoder path decode different values")
        let again: Value
        do {
            again = try coder.decode(Value.self, from: first, userInfo: [:])
        } catch {
            fuzzFailure("a decoded \(Value.self) encodes to bytes that do not decode: \(error)")
        }
        fuzzCheck(canonical(first) == canonical(encode(again)), "a \(Value.self) changes on a second round trip")
    }

    /// The value the bytes hold, written with keyed entries sorted and NaNs alike.
    static func canonical(_ bytes: ByteBuffer) -> String {
        var reader = bytes
        guard let value = try? BinaryValue.read(from: &reader, depth: 0), reader.readableBytes == 0 else {
            fuzzFailure("the coder wrote bytes that it cannot read")
        }
        var out = ""
        render(value, into: &out)
        return out
    }

    private static func render(_ value: BinaryValue, into out: inout String) {
        switch value {
        case .null: out += "n"
        case .bool(let flag): out += flag ? "t" : "f"
        case .int(let integer): out += "i\(integer);"
        case .uint(let integer): out += "u\(integer);"
        case .double(let number): out += number.isNaN ? "d nan;" : "d\(number.bitPattern);"
        case .string(let string): out += "s\(string.utf8.count):\(string)"
        case .unkeyed(let values):
            out += "[\(values.count):"
            for value in values { render(value, into: &out) }
            out += "]"
        case .keyed(let entries):
            out += "{\(entries.count):"
            for entry in entries.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
                out += "s\(entry.key.utf8.count):\(entry.key)="
                render(entry.value, into: &out)
            }
            out += "}"
        case .bytes(let bytes):
            out += "b\(bytes.readableBytes):\(Array(bytes.readableBytesView))"
        case .packed(let element, let count, let block):
            out += "p\(element.rawValue),\(count):\(Array(block.readableBytesView))"
        }
    }
}

// MARK: - Types

/// An enum with associated values, nested and recursive.
indirect enum FuzzShape: Codable, Sendable {
    case point
    case circle(radius: Double)
    case rectangle(width: Int, height: Int)
    case polygon([FuzzShape]?)
    case labelled(String, FuzzShape)

    static var samples: [FuzzShape] {
        [
            .point, .circle(radius: 1.5), .rectangle(width: 2, height: -3),
            .polygon([.point, .circle(radius: 0)]), .polygon(nil), .labelled("l", .labelled("m", .point)),
        ]
    }
}

/// A nested struct: optionals, enums (raw and with payloads), arrays, dictionaries, bulk
/// values, another module's type and itself.
struct FuzzRecord: Codable, Sendable {
    enum Status: String, Codable, Sendable { case active, suspended, gone }
    enum Level: Int, Codable, Sendable { case low = 1, middle = 5, high = 10 }

    var id: Int
    var name: String
    var email: String?
    var score: Double?
    var ratio: Float
    var small: Int8
    var port: UInt16
    var big: UInt64?
    var flags: [Bool]
    var tags: [String]
    var counts: [String: Int]
    var byNumber: [Int: String]?
    var matrix: [[Int]]
    var samples: [Double]
    var payload: [UInt8]?
    var data: Data?
    var status: Status
    var level: Level?
    var shape: FuzzShape
    var shapes: [FuzzShape]?
    var member: ClusterNode?
    var children: [FuzzRecord]

    static var minimal: FuzzRecord {
        FuzzRecord(
            id: 0, name: "", email: nil, score: nil, ratio: 0, small: 0, port: 0, big: nil, flags: [], tags: [],
            counts: [:], byNumber: nil, matrix: [], samples: [], payload: nil, data: nil, status: .active, level: nil,
            shape: .point, shapes: nil, member: nil, children: [])
    }

    static var sample: FuzzRecord {
        FuzzRecord(
            id: -42, name: "record", email: "a@b.c", score: 0.25, ratio: 3.5, small: -7, port: 7001,
            big: .max, flags: [true, false], tags: ["x", "yz"], counts: ["one": 1, "two": 2],
            byNumber: [3: "three", -4: "minus four"], matrix: [[1, 2], [], [3]], samples: [1, -2.5],
            payload: [0, 255], data: Data([9, 8]), status: .suspended, level: .high,
            shape: .rectangle(width: 3, height: 4), shapes: [.point, .labelled("c", .circle(radius: 2))],
            member: ClusterNode(host: "10.0.0.2", port: 7002, uid: 22), children: [minimal, minimal])
    }
}
