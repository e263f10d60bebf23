/// What the runtime hands to ``ActorDefinition/_turn(_:)``: the actor's cell (unretained: the
/// worker holds it), the worker's envelope buffer and the turn's message limit. Runtime
/// detail; do not create or use it.
public struct _ActorTurn {
    @usableFromInline let cell: UnsafeMutableRawPointer
    @usableFromInline let buffer: EnvelopeBuffer
    @usableFromInline let limit: Int

    init(cell: AnyCell, buffer: EnvelopeBuffer, limit: Int) {
        self.cell = Unmanaged.passUnretained(cell).toOpaque()
        self.buffer = buffer
        self.limit = limit
    }
}
