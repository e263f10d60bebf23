/// What the runtime hands to ``ActorDefinition/_turn(_:)``: the actor's cell (unretained: the
/// worker holds it), the worker's envelope buffer, the turn's message limit and the worker's
/// handler counter. Runtime detail; do not create or use it.
public struct _ActorTurn {
    @usableFromInline let cell: UnsafeMutableRawPointer
    @usableFromInline let buffer: UnsafeEnvelopeBuffer
    @usableFromInline let limit: Int
    @usableFromInline let progress: UnsafeTurnProgress

    init(cell: AnyCell, buffer: UnsafeEnvelopeBuffer, limit: Int, progress: UnsafeTurnProgress) {
        // Safety: unretained: the turn's runner holds the cell (see `AnyCell.entryRetained`) for as long
        // as this value lives, which is one `_turn` call.
        self.cell = Unmanaged.passUnretained(cell).toOpaque()
        self.buffer = buffer
        self.limit = limit
        self.progress = progress
    }
}
