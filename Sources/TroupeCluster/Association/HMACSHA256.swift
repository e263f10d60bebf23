/// HMAC-SHA256 (RFC 2104 over FIPS 180-4's SHA-256) for the handshake's proofs.
///
/// Why not swift-crypto: the handshake needs this one function, and swift-crypto compiles a
/// copy of BoringSSL into every build that links TroupeCluster (several minutes each on a
/// 2-core machine, in each of the sanitizer and fuzzing builds). SHA-256 has no secret-dependent
/// branch or table index (additions, rotations and bitwise operations on fixed-size words), so
/// this plain implementation runs in time independent of the key and message contents; proofs
/// are compared in constant time by ``Handshake/verify(_:equals:)``.
///
/// Checked against FIPS 180-4's and RFC 4231's published vectors and against swift-crypto on
/// random keys and messages (`HMACSHA256Tests`). Handshakes are rare: clarity over speed.
enum HMACSHA256 {
    static let digestLength = 32

    /// The authentication code of `message` under `key` (any length; a key longer than SHA-256's
    /// 64-byte block is hashed first, as RFC 2104 says).
    static func authenticationCode(for message: UnsafeRawBufferPointer, key: [UInt8]) -> [UInt8] {
        var blockKey = key.count > SHA256Hasher.blockLength ? SHA256Hasher.hash(key) : key
        blockKey += [UInt8](repeating: 0, count: SHA256Hasher.blockLength - blockKey.count)

        var inner = SHA256Hasher()
        inner.update(blockKey.map { $0 ^ 0x36 })
        inner.update(message)
        let innerDigest = inner.finalize()

        var outer = SHA256Hasher()
        outer.update(blockKey.map { $0 ^ 0x5c })
        outer.update(innerDigest)
        return outer.finalize()
    }

    static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { authenticationCode(for: $0, key: key) }
    }
}

/// SHA-256 (FIPS 180-4, section 6.2), fed in pieces.
struct SHA256Hasher {
    static let blockLength = 64

    /// Section 5.3.3: the first 32 bits of the fractional parts of the first eight primes'
    /// square roots.
    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    /// Bytes not yet hashed: always fewer than a block between calls.
    private var pending: [UInt8] = []
    /// Bytes fed so far (the message length in the final padding).
    private var byteCount: UInt64 = 0

    init() { pending.reserveCapacity(Self.blockLength) }

    static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        byteCount &+= UInt64(bytes.count)
        for byte in bytes {
            pending.append(byte)
            if pending.count == Self.blockLength {
                compress(pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
    }

    /// The digest; the hasher must not be used afterwards.
    mutating func finalize() -> [UInt8] {
        // Section 5.1.1: a one bit, zeros up to 56 bytes into a block, the length in bits.
        let bitLength = byteCount &* 8
        var padding: [UInt8] = [0x80]
        padding += [UInt8](repeating: 0, count: (Self.blockLength + 55 - pending.count) % Self.blockLength)
        for shift in stride(from: 56, through: 0, by: -8) {
            padding.append(UInt8(truncatingIfNeeded: bitLength >> shift))
        }
        update(padding)
        precondition(pending.isEmpty, "SHA-256 padding must end on a block boundary")
        var digest: [UInt8] = []
        digest.reserveCapacity(HMACSHA256.digestLength)
        for word in state {
            for shift in stride(from: 24, through: 0, by: -8) {
                digest.append(UInt8(truncatingIfNeeded: word >> shift))
            }
        }
        return digest
    }

    /// Section 6.2.2: one 64-byte block into the state.
    private mutating func compress(_ block: [UInt8]) {
        var schedule = [UInt32](repeating: 0, count: 64)
        for t in 0..<16 {
            schedule[t] =
                UInt32(block[4 * t]) << 24 | UInt32(block[4 * t + 1]) << 16 | UInt32(block[4 * t + 2]) << 8
                | UInt32(block[4 * t + 3])
        }
        for t in 16..<64 {
            let s0 = schedule[t - 15].rotatedRight(7) ^ schedule[t - 15].rotatedRight(18) ^ (schedule[t - 15] >> 3)
            let s1 = schedule[t - 2].rotatedRight(17) ^ schedule[t - 2].rotatedRight(19) ^ (schedule[t - 2] >> 10)
            schedule[t] = schedule[t - 16] &+ s0 &+ schedule[t - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
        for t in 0..<64 {
            let sum1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
            let choice = (e & f) ^ (~e & g)
            let temp1 = h &+ sum1 &+ choice &+ Self.roundConstants[t] &+ schedule[t]
            let sum0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let temp2 = sum0 &+ majority
            (h, g, f, e, d, c, b, a) = (g, f, e, d &+ temp1, c, b, a, temp1 &+ temp2)
        }
        for (index, word) in [a, b, c, d, e, f, g, h].enumerated() { state[index] &+= word }
    }

    /// Section 4.2.2: the first 32 bits of the fractional parts of the first 64 primes' cube roots.
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}

extension UInt32 {
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}
