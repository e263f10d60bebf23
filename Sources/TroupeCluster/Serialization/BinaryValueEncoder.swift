import NIOCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One value being encoded: containers hand out nodes to their children and are written once
/// the whole value has been encoded (a nested container may be filled after its parent's next
/// entry). One encoding, one thread.
final class EncodedNode {
    enum Content {
        case empty
        case scalar(BinaryValue)
        case unkeyed([EncodedNode])
        case keyed([(key: String, node: EncodedNode)])
    }
    var content: Content = .empty

    func write(into buffer: inout ByteBuffer) {
        switch content {
        case .empty: BinaryValue.null.writeScalar(into: &buffer)
        case .scalar(let value): value.writeScalar(into: &buffer)
        case .unkeyed(let nodes):
            buffer.writeInteger(BinaryValue.Tag.unkeyed.rawValue)
            buffer.writeVarint(UInt64(nodes.count))
            for node in nodes { node.write(into: &buffer) }
        case .keyed(let entries):
            buffer.writeInteger(BinaryValue.Tag.keyed.rawValue)
            buffer.writeVarint(UInt64(entries.count))
            for entry in entries {
                buffer.writeBinaryString(entry.key)
                entry.node.write(into: &buffer)
            }
        }
    }

    func append(_ node: EncodedNode) {
        guard case .unkeyed(var nodes) = content else { preconditionFailure("not an unkeyed container") }
        content = .empty
        nodes.append(node)
        content = .unkeyed(nodes)
    }

    func append(_ node: EncodedNode, forKey key: String) {
        guard case .keyed(var entries) = content else { preconditionFailure("not a keyed container") }
        content = .empty
        entries.append((key, node))
        content = .keyed(entries)
    }

    static func scalar(_ value: BinaryValue) -> EncodedNode {
        let node = EncodedNode()
        node.content = .scalar(value)
        return node
    }
}

struct BinaryValueEncoder: Encoder {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .keyed = node.content {} else { node.content = .keyed([]) }
        return KeyedEncodingContainer(KeyedBinaryEncoding<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .unkeyed = node.content {} else { node.content = .unkeyed([]) }
        return UnkeyedBinaryEncoding(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueBinaryEncoding(node: node, codingPath: codingPath)
    }
}

/// Encodes a value into a fresh node.
func encodedNode<Value: Encodable>(_ value: Value, codingPath: [any CodingKey]) throws -> EncodedNode {
    if let bulk = BinaryBulk.encode(value) { return .scalar(bulk) }
    let node = EncodedNode()
    try value.encode(to: BinaryValueEncoder(node: node, codingPath: codingPath))
    return node
}

struct KeyedBinaryEncoding<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    private func put(_ value: BinaryValue, _ key: Key) { node.append(.scalar(value), forKey: key.stringValue) }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(.uint(value), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        node.append(try encodedNode(value, codingPath: codingPath + [key]), forKey: key.stringValue)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodedNode()
        node.append(child, forKey: key.stringValue)
        return BinaryValueEncoder(node: child, codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = EncodedNode()
        node.append(child, forKey: key.stringValue)
        return BinaryValueEncoder(node: child, codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { superEncoder(key: BinaryStringKey.super) }

    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(key: key) }

    private func superEncoder(key: any CodingKey) -> any Encoder {
        let child = EncodedNode()
        node.append(child, forKey: key.stringValue)
        return BinaryValueEncoder(node: child, codingPath: codingPath + [key])
    }
}

struct UnkeyedBinaryEncoding: UnkeyedEncodingContainer, BinaryScalarEncoding {
    let node: EncodedNode
    let codingPath: [any CodingKey]
    var count: Int {
        if case .unkeyed(let nodes) = node.content { return nodes.count }
        return 0
    }

    func put(_ value: BinaryValue) { node.append(.scalar(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        node.append(try encodedNode(value, codingPath: codingPath + [BinaryIndexKey(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<
        NestedKey
    > {
        let child = EncodedNode()
        let path = codingPath + [BinaryIndexKey(count)]
        node.append(child)
        return BinaryValueEncoder(node: child, codingPath: path).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = EncodedNode()
        let path = codingPath + [BinaryIndexKey(count)]
        node.append(child)
        return BinaryValueEncoder(node: child, codingPath: path).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = EncodedNode()
        let path = codingPath + [BinaryIndexKey(count)]
        node.append(child)
        return BinaryValueEncoder(node: child, codingPath: path)
    }
}

struct SingleValueBinaryEncoding: SingleValueEncodingContainer, BinaryScalarEncoding {
    let node: EncodedNode
    let codingPath: [any CodingKey]

    func put(_ value: BinaryValue) { node.content = .scalar(value) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        if let bulk = BinaryBulk.encode(value) { return put(bulk) }
        try value.encode(to: BinaryValueEncoder(node: node, codingPath: codingPath))
    }
}

/// An unkeyed or single-value container: each scalar becomes one value, by `put`.
protocol BinaryScalarEncoding {
    func put(_ value: BinaryValue)
}

extension BinaryScalarEncoding {
    mutating func encodeNil() throws { put(.null) }
    mutating func encode(_ value: Bool) throws { put(.bool(value)) }
    mutating func encode(_ value: String) throws { put(.string(value)) }
    mutating func encode(_ value: Double) throws { put(.double(value)) }
    mutating func encode(_ value: Float) throws { put(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { put(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { put(.int(value)) }
    mutating func encode(_ value: UInt) throws { put(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { put(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { put(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { put(.uint(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { put(.uint(value)) }
}

/// The key of a keyed container's `super` entry.
struct BinaryStringKey: CodingKey {
    static let `super` = BinaryStringKey(stringValue: "super")
    let stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// The coding key of an unkeyed container's element.
struct BinaryIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}
