internal import CTroupe

/// The one type in Troupe that touches raw envelope memory.
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
        raw = (payload - Int(CTroupe_envelope_payload_offset)).assumingMemoryBound(to: CTroupe_envelope.self)
    }

    /// Allocates a user envelope with no ask token and returns where its payload goes: the
    /// non-generic half of `tell`'s inlinable send path (the caller's specialised code moves
    /// the payload in, then hands the envelope to ``AnyCell/pushUserEnvelope(payload:)``).
    /// Any thread.
    @usableFromInline
    static func allocateUserPayload(size: Int) -> UnsafeMutableRawPointer {
        allocate(payloadSize: size, kind: UInt32(CTroupe_envelope_kind_user), askToken: nil).payload
    }

    /// Allocates an envelope whose payload is not initialised yet. Any thread.
    @inline(__always)
    static func allocate(payloadSize: Int, kind: UInt32, askToken: AskToken?) -> Envelope {
        let raw = CTroupe_envelope_alloc(payloadSize)!
        raw.pointee.kind = kind
        raw.pointee.ask_token = askToken?.raw
        return Envelope(raw: raw)
    }

    /// Allocates an envelope and moves `payload` into it. Any thread.
    @inline(__always)
    static func make<Payload>(_ payload: consuming Payload, kind: UInt32, askToken: AskToken?) -> Envelope {
        let envelope = allocate(payloadSize: MemoryLayout<Payload>.size, kind: kind, askToken: askToken)
        envelope.payload.bindMemory(to: Payload.self, capacity: 1).initialize(to: payload)
        return envelope
    }

    /// Where the payload starts.
    var payload: UnsafeMutableRawPointer { UnsafeMutableRawPointer(raw) + Int(CTroupe_envelope_payload_offset) }

    var isSystem: Bool { raw.pointee.kind == UInt32(CTroupe_envelope_kind_system) }
    var askToken: AskToken? { raw.pointee.ask_token.map(AskToken.init(raw:)) }

    /// Moves the payload out and frees the envelope. Consumer only.
    @inline(__always)
    func take<Payload>(as type: Payload.Type) -> Payload {
        let value = payload.assumingMemoryBound(to: Payload.self).move()
        CTroupe_envelope_free(raw)
        return value
    }
}
