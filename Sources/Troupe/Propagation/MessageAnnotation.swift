internal import CTroupe

/// What an envelope carries beside its payload when the system propagates a context: the
/// context, and the send time when the envelope was also sampled.
///
/// It travels in the envelope header's side word (`CTroupe_envelope.side`), which holds either 0
/// (nothing), an odd value (`side.sent_at`: a sampled envelope's send time; the allocator sets
/// the low bit), or, as here, the even address of a retained `MessageAnnotation`
/// (`side.annotation`). Whoever takes the envelope's payload takes
/// the annotation with it (``Envelope/take(as:)``, the turn's annotated path), exactly once.
final class MessageAnnotation: Sendable {
    let context: any Sendable
    /// The sampled send time (odd), or 0.
    let sentAt: UInt64

    init(context: any Sendable, sentAt: UInt64) {
        self.context = context
        self.sentAt = sentAt
    }

    /// Whether an envelope's side word is an annotation's address.
    @inline(__always)
    static func isAnnotation(_ word: UInt64) -> Bool { word != 0 && word & 1 == 0 }

    /// Takes the annotation out of a side word (its retain passes to the caller).
    static func take(_ word: UInt64) -> MessageAnnotation {
        // Safety: `annotate(with:)` stored a retained annotation's address in this word, and
        // the word is taken once (the turn's annotated path or `dropAnnotation`), then cleared
        // or freed with its envelope.
        Unmanaged<MessageAnnotation>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(word))!).takeRetainedValue()
    }
}

extension Envelope {
    /// Attaches `context` (with the envelope's send time, if it was sampled). Before the push,
    /// by the sender, who owns the envelope.
    func annotate(with context: any Sendable) {
        // Safety: the sender owns the fresh envelope until the push. The envelope owns the retain below
        // until `take` gives it back once; an object's address is 16-byte aligned, so the word is even
        // and not 0, never mistaken for a send time.
        let sentAt = raw.pointee.side.sent_at
        let annotation = MessageAnnotation(context: context, sentAt: EnvelopeLayout.isSendTime(sentAt) ? sentAt : 0)
        raw.pointee.side.annotation = UInt64(UInt(bitPattern: Unmanaged.passRetained(annotation).toOpaque()))
    }

    /// Releases the annotation, if any, of an envelope whose payload is being taken without a
    /// handler (a dead letter, a system message, a job).
    func dropAnnotation() {
        // Safety: the consumer owns the popped envelope; clearing the word before `take` makes the
        // retain taken once.
        let word = raw.pointee.side.annotation
        guard MessageAnnotation.isAnnotation(word) else { return }
        raw.pointee.side.annotation = 0
        _ = MessageAnnotation.take(word)
    }
}

/// Which context a slowly sent message carries (when the system propagates contexts).
enum CarriedContext {
    /// The sender's current one (``MessageContextPropagation/captureContext()``).
    case capture
    /// This one.
    case given((any Sendable)?)
}

extension AnyCell {
    /// Attaches the context a message carries to its envelope, if there is one. Non-generic, so
    /// that the existentials are handled by code compiled for them (in the generic send path,
    /// each copy and destroy went through generic metadata lookups). The sender, before the push.
    final func attachContext(to envelope: Envelope, _ context: CarriedContext) {
        guard let propagation = system.contextPropagation else { return }
        switch context {
        case .capture:
            if let captured = propagation.captureContext() { envelope.annotate(with: captured) }
        case .given(let given):
            if let given { envelope.annotate(with: given) }
        }
    }
}
