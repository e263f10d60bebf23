import Testing
import TroupePersistence

/// Type names, versions and upcasters: old events are read through the chain, and a gap in it
/// is reported by the check at start.
@Suite struct PersistenceCodecTests {
    struct V3: Codable, Equatable { var cents: Int }

    /// v1 stored a decimal string, v2 an object with `amount`, v3 one with `cents`.
    static let codec = PersistenceCodec<V3>.json(typeName: "payment", version: 3)
        .upcasting(from: 1) { bytes in Array("{\"amount\":\(String(decoding: bytes, as: UTF8.self))}".utf8) }
        .upcasting(from: 2) { bytes in
            Array(String(decoding: bytes, as: UTF8.self).replacing("amount", with: "cents").utf8)
        }

    @Test func oldVersionsAreUpcastThroughTheChain() throws {
        #expect(
            try Self.codec.decode(SerializedEvent(typeName: "payment", version: 1, payload: Array("42".utf8)))
                == V3(cents: 42))
        #expect(
            try Self.codec.decode(
                SerializedEvent(typeName: "payment", version: 2, payload: Array("{\"amount\":7}".utf8)))
                == V3(cents: 7))
        let written = try Self.codec.encode(V3(cents: 9))
        #expect(written.typeName == "payment" && written.version == 3)
        #expect(try Self.codec.decode(written) == V3(cents: 9))
        #expect(Self.codec.oldestReadableVersion == 1)
    }

    @Test func aMissingUpcasterIsReportedByTheCheckNotAtReplay() throws {
        let withoutV1 = PersistenceCodec<V3>.json(typeName: "payment", version: 3).upcasting(from: 2) { $0 }
        let stored: Set = [
            StoredTypeVersion(typeName: "payment", version: 1), StoredTypeVersion(typeName: "other", version: 9),
        ]
        #expect(throws: PersistenceError.self) { try withoutV1.check(storedVersions: stored) }
        try Self.codec.check(storedVersions: stored)  // has the whole chain; "other" is not its type
        #expect(throws: PersistenceError.self) {
            try Self.codec.check(storedVersions: [StoredTypeVersion(typeName: "payment", version: 4)])
        }
    }

    @Test func aNewerVersionOrAnotherTypeIsATypedError() {
        #expect(throws: PersistenceError.self) {
            try Self.codec.decode(SerializedEvent(typeName: "payment", version: 4, payload: []))
        }
        #expect(throws: PersistenceError.self) {
            try Self.codec.decode(SerializedEvent(typeName: "refund", version: 3, payload: []))
        }
    }
}
