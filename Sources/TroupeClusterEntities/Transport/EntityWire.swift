import TroupeCluster
import TroupeClusterMembership

/// The bytes of a batch between two nodes' regions: a compact, length-prefixed layout written
/// and read by hand. Through `Codable`, decoding the envelopes' keyed containers was a tenth of
/// a node's time under load (perf, `troupe-bench cluster-entities`); as one `[UInt8]`, the
/// cluster's binary coder moves the batch with one copy each way.
///
/// Layout (integers little-endian): a batch is `u64 sender, u32 envelopes, u32 answers`, then each. An
/// envelope is `bytes key, bytes payload, u8 flags (1: request, 2: origin, 4: handoff signal),
/// [bytes request], u64 askID, [bytes host, u32 port, u64 uid], u8 hops, [u8 signal kind,
/// u64 fingerprint, u64 member, u64 incarnation]`; an answer is `u64 askID, u8 code,
/// bytes payload`; `bytes` is a `u32` length and that many bytes.
///
/// The bytes come from an authenticated member, yet reading trusts nothing: every length is
/// checked against what is left, and counts cannot ask for more items than the bytes can hold.
enum EntityWire {
    struct Malformed: Error, CustomStringConvertible {
        let reason: String
        var description: String { "a malformed entity batch: \(reason)" }
    }

    static func encode(_ batch: EntityBatch) -> [UInt8] {
        var writer = Writer()
        writer.bytes.reserveCapacity(
            16 + batch.envelopes.reduce(0) { $0 + $1.byteCount } + batch.answers.reduce(0) { $0 + $1.byteCount })
        writer.u64(batch.sender)
        writer.u32(UInt32(batch.envelopes.count))
        writer.u32(UInt32(batch.answers.count))
        for envelope in batch.envelopes { writer.envelope(envelope) }
        for answer in batch.answers { writer.answer(answer) }
        return writer.bytes
    }

    static func decodeBatch(_ bytes: [UInt8]) throws(Malformed) -> EntityBatch {
        var reader = Reader(bytes: bytes)
        let sender = try reader.u64()
        let envelopeCount = try reader.count(minimumItemSize: 18)
        let answerCount = try reader.count(minimumItemSize: 13)
        var batch = EntityBatch(sender: sender)
        batch.envelopes.reserveCapacity(envelopeCount)
        for _ in 0..<envelopeCount { batch.envelopes.append(try reader.envelope()) }
        batch.answers.reserveCapacity(answerCount)
        for _ in 0..<answerCount { batch.answers.append(try reader.answer()) }
        try reader.finish()
        return batch
    }

    static func encode(_ envelope: EntityEnvelope) -> [UInt8] {
        var writer = Writer()
        writer.envelope(envelope)
        return writer.bytes
    }

    static func decodeEnvelope(_ bytes: [UInt8]) throws(Malformed) -> EntityEnvelope {
        var reader = Reader(bytes: bytes)
        let envelope = try reader.envelope()
        try reader.finish()
        return envelope
    }

    static func encode(_ answer: EntityAnswer) -> [UInt8] {
        var writer = Writer()
        writer.answer(answer)
        return writer.bytes
    }

    static func decodeAnswer(_ bytes: [UInt8]) throws(Malformed) -> EntityAnswer {
        var reader = Reader(bytes: bytes)
        let answer = try reader.answer()
        try reader.finish()
        return answer
    }

    struct Writer {
        var bytes: [UInt8] = []

        mutating func u8(_ value: UInt8) { bytes.append(value) }

        mutating func u32(_ value: UInt32) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func u64(_ value: UInt64) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func data(_ value: [UInt8]) {
            u32(UInt32(value.count))
            bytes.append(contentsOf: value)
        }

        mutating func string(_ value: String) {
            u32(UInt32(value.utf8.count))
            bytes.append(contentsOf: value.utf8)
        }

        mutating func envelope(_ envelope: EntityEnvelope) {
            string(envelope.key)
            data(envelope.payload)
            u8((envelope.request == nil ? 0 : 1) | (envelope.origin == nil ? 0 : 2) | (envelope.signal == nil ? 0 : 4))
            if let request = envelope.request { string(request) }
            u64(envelope.askID)
            if let origin = envelope.origin {
                string(origin.host)
                u32(UInt32(truncatingIfNeeded: origin.port))
                u64(origin.uid)
            }
            u8(envelope.hops)
            if let signal = envelope.signal {
                u8(signal.kind.rawValue)
                u64(signal.fingerprint)
                u64(signal.member)
                u64(signal.incarnation)
            }
        }

        mutating func answer(_ answer: EntityAnswer) {
            u64(answer.askID)
            u8(answer.code.rawValue)
            data(answer.payload)
        }
    }

    struct Reader {
        let bytes: [UInt8]
        var index = 0

        var remaining: Int { bytes.count - index }

        mutating func u8() throws(Malformed) -> UInt8 {
            guard remaining >= 1 else { throw Malformed(reason: "cut short at byte \(index)") }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func u32() throws(Malformed) -> UInt32 {
            guard remaining >= 4 else { throw Malformed(reason: "cut short at byte \(index)") }
            var value: UInt32 = 0
            for shift in 0..<4 { value |= UInt32(bytes[index + shift]) << (8 * shift) }
            index += 4
            return value
        }

        mutating func u64() throws(Malformed) -> UInt64 {
            guard remaining >= 8 else { throw Malformed(reason: "cut short at byte \(index)") }
            var value: UInt64 = 0
            for shift in 0..<8 { value |= UInt64(bytes[index + shift]) << (8 * shift) }
            index += 8
            return value
        }

        /// A count of items of at least `minimumItemSize` bytes each: refused when the bytes
        /// left could not hold that many (so a count cannot make the reader reserve memory the
        /// batch does not carry).
        mutating func count(minimumItemSize: Int) throws(Malformed) -> Int {
            let count = Int(try u32())
            guard count <= remaining / minimumItemSize else {
                throw Malformed(reason: "\(count) items announced, \(remaining) bytes left")
            }
            return count
        }

        mutating func data() throws(Malformed) -> [UInt8] {
            let length = Int(try u32())
            guard length <= remaining else {
                throw Malformed(reason: "a field of \(length) bytes with \(remaining) left")
            }
            defer { index += length }
            return Array(bytes[index..<index + length])
        }

        mutating func string() throws(Malformed) -> String {
            let utf8 = try data()
            guard let string = String(validating: utf8, as: UTF8.self) else {
                throw Malformed(reason: "a string that is not UTF-8")
            }
            return string
        }

        mutating func envelope() throws(Malformed) -> EntityEnvelope {
            let key = try string()
            let payload = try data()
            let flags = try u8()
            guard flags & ~7 == 0 else { throw Malformed(reason: "unknown envelope flags \(flags)") }
            let request = flags & 1 != 0 ? try string() : nil
            let askID = try u64()
            var origin: ClusterNode?
            if flags & 2 != 0 {
                let host = try string()
                let port = Int(try u32())
                origin = ClusterNode(host: host, port: port, uid: try u64())
            }
            let hops = try u8()
            guard (request == nil) == (askID == 0), request == nil || origin != nil else {
                throw Malformed(reason: "a request needs an ask number and an origin, a message neither")
            }
            var signal: HandoffSignal?
            if flags & 4 != 0 {
                let raw = try u8()
                guard let kind = HandoffSignal.Kind(rawValue: raw) else {
                    throw Malformed(reason: "unknown handoff signal \(raw)")
                }
                guard request == nil, origin == nil, key.isEmpty, payload.isEmpty else {
                    throw Malformed(reason: "a handoff signal with an entity's fields")
                }
                signal = HandoffSignal(kind: kind, fingerprint: try u64(), member: try u64(), incarnation: try u64())
            }
            return EntityEnvelope(
                key: key, payload: payload, request: request, askID: askID, origin: origin, hops: hops,
                signal: signal)
        }

        mutating func answer() throws(Malformed) -> EntityAnswer {
            let askID = try u64()
            let raw = try u8()
            guard let code = EntityAnswer.Code(rawValue: raw) else {
                throw Malformed(reason: "unknown answer code \(raw)")
            }
            return EntityAnswer(askID: askID, code: code, payload: try data())
        }

        func finish() throws(Malformed) {
            guard remaining == 0 else { throw Malformed(reason: "\(remaining) bytes after the end") }
        }
    }
}
