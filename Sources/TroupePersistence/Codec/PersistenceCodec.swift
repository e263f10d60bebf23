#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How a durable actor's events (or snapshots) become bytes and back, with a stable type name
/// and a layout version, and the upcasters that read older versions.
///
/// ```swift
/// // Version 2 renamed `amount` to `cents`; events written as version 1 are rewritten on read.
/// static let events = PersistenceCodec<AccountEvent>.json(typeName: "account-event", version: 2)
///     .upcasting(from: 1) { v1 in try renameKey(in: v1, from: "amount", to: "cents") }
/// ```
///
/// Every version from the oldest one you still read up to the current one needs its upcaster;
/// ``check(storedVersions:)`` (called by ``Journal/check(_:)`` at start) reports a missing one
/// before any actor replays, not in the middle of a recovery.
public struct PersistenceCodec<Value>: Sendable {
    /// The stable name stored beside each value.
    public let typeName: String
    /// The layout version values are written in.
    public let version: Int
    private let encodeBody: @Sendable (Value) throws -> [UInt8]
    private let decodeBody: @Sendable ([UInt8]) throws -> Value
    /// `upcasters[v]` turns version `v`'s bytes into version `v + 1`'s.
    private var upcasters: [Int: @Sendable ([UInt8]) throws -> [UInt8]] = [:]

    /// A codec from your own functions (a binary format, protobuf, …).
    public init(
        typeName: String, version: Int = 1,
        encode: @escaping @Sendable (Value) throws -> [UInt8],
        decode: @escaping @Sendable ([UInt8]) throws -> Value
    ) {
        precondition(!typeName.isEmpty, "a PersistenceCodec needs a type name")
        precondition(version >= 1, "versions start at 1")
        self.typeName = typeName
        self.version = version
        encodeBody = encode
        decodeBody = decode
    }

    /// Reads values written as version `from` by rewriting their bytes into version `from + 1`
    /// (chain one per version).
    public func upcasting(from oldVersion: Int, _ upcast: @escaping @Sendable ([UInt8]) throws -> [UInt8]) -> Self {
        precondition(
            oldVersion >= 1 && oldVersion < version,
            "an upcaster reads an older version: \(oldVersion) is not in 1..<\(version)")
        var codec = self
        codec.upcasters[oldVersion] = upcast
        return codec
    }

    /// The oldest version this codec can read.
    public var oldestReadableVersion: Int {
        var oldest = version
        while upcasters[oldest - 1] != nil { oldest -= 1 }
        return oldest
    }

    public func encode(_ value: Value) throws -> SerializedEvent {
        SerializedEvent(typeName: typeName, version: version, payload: try encodeBody(value))
    }

    /// Decodes `serialized`, upcasting it first when it was written by an older version.
    public func decode(_ serialized: SerializedEvent) throws -> Value {
        guard serialized.typeName == typeName else {
            throw PersistenceError.unreadableVersion(
                typeName: serialized.typeName, version: serialized.version,
                reason: "this codec reads \(typeName), not \(serialized.typeName)")
        }
        var payload = serialized.payload
        var at = serialized.version
        guard at <= version else {
            throw PersistenceError.unreadableVersion(
                typeName: typeName, version: at,
                reason:
                    "written by a newer layout than this codec's version \(version) (an older build reading newer data)"
            )
        }
        while at < version {
            guard let upcast = upcasters[at] else {
                throw PersistenceError.unreadableVersion(
                    typeName: typeName, version: at,
                    reason: "no upcaster from version \(at) to \(at + 1): add `.upcasting(from: \(at))`")
            }
            payload = try upcast(payload)
            at += 1
        }
        return try decodeBody(payload)
    }

    /// Throws ``PersistenceError/unreadableVersion(typeName:version:reason:)`` for the first
    /// stored version of this codec's type that it cannot read.
    public func check(storedVersions: Set<StoredTypeVersion>) throws {
        for stored in storedVersions.sorted(by: { $0.version < $1.version }) where stored.typeName == typeName {
            if stored.version > version {
                throw PersistenceError.unreadableVersion(
                    typeName: typeName, version: stored.version,
                    reason: "the store holds a newer version than this codec's \(version)")
            }
            if stored.version < oldestReadableVersion {
                throw PersistenceError.unreadableVersion(
                    typeName: typeName, version: stored.version,
                    reason: "no upcaster from version \(oldestReadableVersion - 1) to \(oldestReadableVersion): "
                        + "add `.upcasting(from: \(oldestReadableVersion - 1))`")
            }
        }
    }
}

extension PersistenceCodec where Value: Codable & Sendable {
    /// JSON, through Foundation's encoder: readable in the database and easy to upcast.
    public static func json(_ type: Value.Type = Value.self, typeName: String, version: Int = 1) -> Self {
        Self(
            typeName: typeName, version: version,
            encode: { value in Array(try JSONEncoder().encode(value)) },
            decode: { bytes in try JSONDecoder().decode(Value.self, from: Data(bytes)) })
    }
}
