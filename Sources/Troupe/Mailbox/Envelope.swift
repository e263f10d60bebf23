internal import CTroupe

/// An owned envelope: the typed handle the send paths and the slow turn use.
///
/// Raw envelope memory is touched in three places only: this type (allocation, payload,
/// header fields through the C type), ``EnvelopeLayout`` (the same header read at fixed offsets by
/// the inlinable turn, which cannot see the C module) and ``MessageAnnotation`` (the header's
/// side word, written before the push).
///
/// An envelope is a C header (`CTroupe_envelope`) followed by a Swift payload. Ownership moves
/// with the pointer: the sender initialises the payload and pushes; the consumer moves the
/// payload out (or destroys it) and frees the envelope. Never both, never neither.
@usableFromInline
struct Envelope {
    let raw: UnsafeMutablePointer<CTroupe_envelope>

    init(raw: UnsafeMutablePointer<CTroupe_envelope>) { self.raw = raw }

    /// The envelope whose payload starts at `payload`.
    init(payload: UnsafeMutableRawPointer) {
        // Safety: every payload pointer Troupe hands out is `payloadOffset` bytes into an
        // envelope that `CTroupe_envelope_alloc` made, whose header is a `CTroupe_envelope`.
        raw = (payload - Int(CTroupe_envelope_payload_offset)).assumingMemoryBound(to: CTroupe_envelope.self)
    }

    /// Allocates an envelope whose payload is not initialised yet. Any thread.
    @inline(__always)
    static func allocate(payloadSize: Int, kind: UInt32, askToken: AskToken?) -> Envelope {
        // Safety: a fresh envelope (the allocator never returns NULL: it aborts when out of memory),
        // held by this thread alone until it is pushed.
        let raw = CTroupe_envelope_alloc(payloadSize)!
        raw.pointee.kind = kind
        raw.pointee.ask_token = askToken?.raw
        return Envelope(raw: raw)
    }

    /// Allocates an envelope and moves `payload` into it. Any thread.
    @inline(__always)
    static func make<Payload>(_ payload: consuming Payload, kind: UInt32, askToken: AskToken?) -> Envelope {
        let envelope = allocate(payloadSize: MemoryLayout<Payload>.size, kind: kind, askToken: askToken)
        // Safety: the allocation has room for `Payload`'s size at a 16-byte-aligned offset
        // (malloc's alignment, the largest a Swift type has without the underscored
        // `@_alignment`; checked in debug builds), and nothing else holds the fresh envelope.
        assert(MemoryLayout<Payload>.alignment <= 16, "\(Payload.self) needs more than 16-byte alignment")
        envelope.payload.bindMemory(to: Payload.self, capacity: 1).initialize(to: payload)
        return envelope
    }

    /// Where the payload starts.
    var payload: UnsafeMutableRawPointer { UnsafeMutableRawPointer(raw) + Int(CTroupe_envelope_payload_offset) }

    // Safety (both header reads): whoever holds the envelope reads what the sender wrote before the
    // push; the mailbox's push and its pop (or drop) order the two.
    var isSystem: Bool { raw.pointee.kind == UInt32(CTroupe_envelope_kind_system) }
    var askToken: AskToken? { raw.pointee.ask_token.map(AskToken.init(raw:)) }

    /// Frees an envelope whose payload was moved out or destroyed. Any thread.
    @usableFromInline
    static func free(_ raw: UnsafeMutableRawPointer) {
        // Safety: `raw` is an envelope's start (a popped buffer entry), which the C allocator made as a
        // `CTroupe_envelope`; its payload was moved out or destroyed, and it is freed once.
        CTroupe_envelope_free(raw.assumingMemoryBound(to: CTroupe_envelope.self))
    }

    /// Moves the payload out and frees the envelope (and drops a carried context: see
    /// ``MessageAnnotation``). Consumer only.
    @inline(__always)
    func take<Payload>(as type: Payload.Type) -> Payload {
        dropAnnotation()
        // Safety: the sender initialised a `Payload` here (the envelope's receiver knows its
        // type: one mailbox, one message type), and the consumer takes it exactly once.
        let value = payload.assumingMemoryBound(to: Payload.self).move()
        CTroupe_envelope_free(raw)
        return value
    }
}

/// A worker's buffer of popped envelopes (`CTroupe_envelope *` in C), typed without the C
/// module so that the inlinable turn can read it.
@usableFromInline
typealias UnsafeEnvelopeBuffer = UnsafeMutablePointer<UnsafeMutableRawPointer?>

/// The envelope header as the inlinable turn reads it: it is compiled into the user's module,
/// which cannot see the C module, so it uses these offsets. `mailbox.c` asserts the same
/// numbers against `CTroupe_envelope` at compile time, and `EnvelopeTests` checks them from
/// Swift.
@usableFromInline
enum EnvelopeLayout {
    @inlinable static var kindOffset: Int { 8 }
    @inlinable static var askTokenOffset: Int { 16 }
    @inlinable static var sideWordOffset: Int { 24 }
    @inlinable static var payloadOffset: Int { 32 }
    @inlinable static var userKind: UInt32 { 0 }

    // Safety (the three loads below): `envelope` is a popped envelope the turn holds, and these are
    // its header's fields, at the offsets and types `mailbox.c` asserts at compile time.
    @inlinable @inline(__always)
    static func isUser(_ envelope: UnsafeMutableRawPointer) -> Bool {
        envelope.load(fromByteOffset: kindOffset, as: UInt32.self) == userKind
    }

    @inlinable @inline(__always)
    static func askToken(_ envelope: UnsafeMutableRawPointer) -> AskToken? {
        envelope.load(fromByteOffset: askTokenOffset, as: UnsafeMutableRawPointer?.self).map(AskToken.init(raw:))
    }

    /// The header's side word (`CTroupe_envelope.side`): 0 for most envelopes; odd, a sampled
    /// envelope's send time (`side.sent_at`); even and not 0, the address of a carried context's
    /// ``MessageAnnotation`` (`side.annotation`). The turn tests it against 0 first, so the common
    /// case costs one load and a branch.
    @inlinable @inline(__always)
    static func sideWord(_ envelope: UnsafeMutableRawPointer) -> UInt64 {
        envelope.load(fromByteOffset: sideWordOffset, as: UInt64.self)
    }

    /// Whether a non-zero side word is a send time (odd) rather than an annotation (even).
    @inlinable @inline(__always)
    static func isSendTime(_ sideWord: UInt64) -> Bool { sideWord & 1 != 0 }

    @inlinable @inline(__always)
    static func payload(_ envelope: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        envelope + payloadOffset
    }
}
