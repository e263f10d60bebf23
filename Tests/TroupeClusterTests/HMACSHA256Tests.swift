import Testing

@testable import TroupeCluster

// swift-crypto is absent from CI's sanitizer builds (TROUPE_CI_SANITIZER_BUILD, Package.swift);
// the published vectors run everywhere.
#if !TROUPE_CI_SANITIZER_BUILD
    import Crypto
#endif

/// The handshake's HMAC-SHA256, against published answers and against swift-crypto.
@Suite struct HMACSHA256Tests {
    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    static func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

    /// FIPS 180-4's examples (NIST's "SHA256.pdf"): empty, one block, two blocks, and one million
    /// bytes (15,625 blocks fed in uneven pieces).
    @Test func sha256MatchesThePublishedExamples() {
        #expect(Self.hex(SHA256Hasher.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            Self.hex(SHA256Hasher.hash(Self.bytes("abc")))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Self.hex(SHA256Hasher.hash(Self.bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            Self.hex(
                SHA256Hasher.hash(
                    Self.bytes(
                        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
                    ))) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        var hasher = SHA256Hasher()
        var fed = 0
        var piece = 1
        while fed < 1_000_000 {
            let size = min(piece, 1_000_000 - fed)
            hasher.update([UInt8](repeating: UInt8(ascii: "a"), count: size))
            fed += size
            piece = piece % 97 + 13  // pieces of 1 to 109 bytes: every offset within a block
        }
        #expect(Self.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// RFC 4231's test cases 1-4, 6 and 7 (case 5 truncates the output, which the handshake never
    /// does): short keys, a key of exactly 20 and 25 bytes, and keys longer than a block.
    @Test(arguments: [
        (
            [UInt8](repeating: 0x0b, count: 20), bytes("Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        ),
        (
            bytes("Jefe"), bytes("what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        ),
        (
            [UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
        ),
        (
            Array(1...25), [UInt8](repeating: 0xcd, count: 50),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
        ),
        (
            [UInt8](repeating: 0xaa, count: 131), bytes("Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        (
            [UInt8](repeating: 0xaa, count: 131),
            bytes(
                "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."
            ),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
        ),
    ])
    func hmacMatchesRFC4231(key: [UInt8], message: [UInt8], expected: String) {
        #expect(Self.hex(HMACSHA256.authenticationCode(for: message, key: key)) == expected)
    }

    #if !TROUPE_CI_SANITIZER_BUILD
        /// 2,000 random keys (0 to 200 bytes: below, at and above the 64-byte block) and messages
        /// (0 to 300 bytes: every padding case), each compared with swift-crypto's answer.
        @Test func hmacAgreesWithSwiftCrypto() {
            var generator = SystemRandomNumberGenerator()
            for _ in 0..<2_000 {
                let key = (0..<Int.random(in: 0...200, using: &generator)).map { _ in UInt8.random(in: 0...255) }
                let message = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255) }
                let reference = Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
                let ours = HMACSHA256.authenticationCode(for: message, key: key)
                #expect(ours == reference, "key \(Self.hex(key)), message \(Self.hex(message))")
                if ours != reference { return }
            }
        }
    #endif
}
