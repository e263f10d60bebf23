#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

struct BinaryValueDecoder: Decoder {
    let value: BinaryValue
    let codingPath: [any CodingKey]
    let sendableUserInfo: [CodingUserInfoKey: any Sendable]
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }

    init(value: BinaryValue, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: any Sendable]) {
        self.value = value
        self.codingPath = codingPath
        sendableUserInfo = userInfo
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .keyed(let entries) = value else {
            throw mismatch([String: Any].self, found: value, at: codingPath)
        }
        return KeyedDecodingContainer(KeyedBinaryDecoding<Key>(entries: entries, decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        if let elements = BinaryBulk.elements(of: value) {
            return UnkeyedBinaryDecoding(values: elements, decoder: self)
        }
        guard case .unkeyed(let values) = value else { throw mismatch([Any].self, found: value, at: codingPath) }
        return UnkeyedBinaryDecoding(values: values, decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueBinaryDecoding(decoder: self)
    }

    func child(_ value: BinaryValue, key: any CodingKey) -> BinaryValueDecoder {
        BinaryValueDecoder(value: value, codingPath: codingPath + [key], userInfo: sendableUserInfo)
    }

    // MARK: Scalars

    func decodeScalar<T>(_ type: T.Type, from value: BinaryValue, at path: [any CodingKey]) throws -> T {
        guard let scalar = value.scalar(as: T.self) else { throw mismatch(type, found: value, at: path) }
        return scalar
    }

    func decodeInteger<T: FixedWidthInteger>(
        _ type: T.Type, from value: BinaryValue, at path: [any CodingKey]
    ) throws
        -> T
    {
        guard value.isInteger else { throw mismatch(type, found: value, at: path) }
        guard let converted = value.integer(as: T.self) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path, debugDescription: "\(value) does not fit in \(T.self)"))
        }
        return converted
    }
}

private func mismatch(_ type: Any.Type, found value: BinaryValue, at path: [any CodingKey]) -> DecodingError {
    if case .null = value {
        return .valueNotFound(type, .init(codingPath: path, debugDescription: "expected \(type), found nil"))
    }
    return .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found \(value.kindName)"))
}

struct KeyedBinaryDecoding<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let entries: [(key: String, value: BinaryValue)]
    let decoder: BinaryValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { entries.compactMap { Key(stringValue: $0.key) } }

    func contains(_ key: Key) -> Bool { find(key) != nil }

    private func find(_ key: Key) -> BinaryValue? {
        let name = key.stringValue
        for entry in entries where entry.key == name { return entry.value }
        return nil
    }

    private func require(_ key: Key) throws -> BinaryValue {
        guard let value = find(key) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no value for key \"\(key.stringValue)\""))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try require(key) { return true }
        return false
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try scalar(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try scalar(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try scalar(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try scalar(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let value = try require(key)
        if let bulk = try BinaryBulk.decode(T.self, from: value) { return bulk }
        return try T(from: decoder.child(value, key: key))
    }

    private func scalar<T>(_ type: T.Type, _ key: Key) throws -> T {
        try decoder.decodeScalar(type, from: try require(key), at: codingPath + [key])
    }

    private func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        try decoder.decodeInteger(type, from: try require(key), at: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder.child(try require(key), key: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder.child(try require(key), key: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        let name = BinaryStringKey.super.stringValue
        let value = entries.first { $0.key == name }?.value ?? .null
        return decoder.child(value, key: BinaryStringKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        decoder.child(find(key) ?? .null, key: key)
    }
}

struct UnkeyedBinaryDecoding: UnkeyedDecodingContainer {
    let values: [BinaryValue]
    let decoder: BinaryValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { values.count }
    var isAtEnd: Bool { currentIndex >= values.count }
    private(set) var currentIndex = 0

    init(values: [BinaryValue], decoder: BinaryValueDecoder) {
        self.values = values
        self.decoder = decoder
    }

    private mutating func next(_ type: Any.Type) throws -> (BinaryValue, BinaryIndexKey) {
        let key = BinaryIndexKey(currentIndex)
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: codingPath + [key], debugDescription: "the unkeyed container is at its end"))
        }
        defer { currentIndex += 1 }
        return (values[currentIndex], key)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if case .null = values[currentIndex] {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try scalar(type) }
    mutating func decode(_ type: String.Type) throws -> String { try scalar(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try scalar(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try scalar(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, key) = try next(type)
        if let bulk = try BinaryBulk.decode(T.self, from: value) { return bulk }
        return try T(from: decoder.child(value, key: key))
    }

    private mutating func scalar<T>(_ type: T.Type) throws -> T {
        let (value, key) = try next(type)
        return try decoder.decodeScalar(type, from: value, at: codingPath + [key])
    }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let (value, key) = try next(type)
        return try decoder.decodeInteger(type, from: value, at: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let (value, key) = try next([String: Any].self)
        return try decoder.child(value, key: key).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (value, key) = try next([Any].self)
        return try decoder.child(value, key: key).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (value, key) = try next(Any.self)
        return decoder.child(value, key: key)
    }
}

struct SingleValueBinaryDecoding: SingleValueDecodingContainer {
    let decoder: BinaryValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool {
        if case .null = decoder.value { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        try decoder.decodeScalar(type, from: decoder.value, at: codingPath)
    }
    func decode(_ type: String.Type) throws -> String {
        try decoder.decodeScalar(type, from: decoder.value, at: codingPath)
    }
    func decode(_ type: Double.Type) throws -> Double {
        try decoder.decodeScalar(type, from: decoder.value, at: codingPath)
    }
    func decode(_ type: Float.Type) throws -> Float {
        try decoder.decodeScalar(type, from: decoder.value, at: codingPath)
    }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let bulk = try BinaryBulk.decode(T.self, from: decoder.value) { return bulk }
        return try T(from: decoder)
    }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        try decoder.decodeInteger(type, from: decoder.value, at: codingPath)
    }
}
