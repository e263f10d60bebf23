import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How a ``ClusterSystem`` turns arguments and results into bytes: ``BinaryClusterCoder`` by
/// default, ``JSONClusterCoder`` for readable bytes, or a format of your own; every node of a
/// cluster must use the same.
///
/// Decoding must accept distributed actor references: `userInfo` holds the cluster system under
/// `CodingUserInfoKey.actorSystemKey`, which a distributed actor's `init(from:)` reads.
/// Called on any thread, concurrently.
public protocol ClusterCoder: Sendable {
    func encode<Value: Encodable>(_ value: Value, into buffer: inout ByteBuffer) throws
    func decode<Value: Decodable>(
        _ type: Value.Type, from buffer: ByteBuffer, userInfo: [CodingUserInfoKey: any Sendable]
    ) throws -> Value
}

/// JSON through Foundation's coders: readable and tolerant, several times slower than
/// ``BinaryClusterCoder``.
public struct JSONClusterCoder: ClusterCoder {
    private let encoder = JSONEncoder()

    public init() {}

    public func encode<Value: Encodable>(_ value: Value, into buffer: inout ByteBuffer) throws {
        buffer.writeBytes(try encoder.encode(value))
    }

    public func decode<Value: Decodable>(
        _ type: Value.Type, from buffer: ByteBuffer, userInfo: [CodingUserInfoKey: any Sendable]
    ) throws -> Value {
        let decoder = JSONDecoder()
        decoder.userInfo = userInfo
        // Safety: the bytes are copied into `Data` inside the closure; the pointer does not escape.
        return try buffer.withUnsafeReadableBytes { bytes in
            try decoder.decode(type, from: Data(bytes))
        }
    }
}
