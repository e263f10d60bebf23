import Synchronization
internal import CTroupe

/// Sampled timing and the facts a snapshot reads about a cell.
extension AnyCell {
    /// How far the mailbox lies from the start of the cell: the same in every cell, whatever
    /// its subclass (the storage is a stored property of this base class, which a subclass's
    /// own properties follow). Lets a walk over many cells find each mailbox from the cell's
    /// address without loading it (``ActorSystem/snapshot(topActors:by:matching:)``).
    final var mailboxOffset: Int {
        // Safety: addresses compared, nothing dereferenced.
        let offset = Int(bitPattern: mailbox) - Int(bitPattern: Unmanaged.passUnretained(self).toOpaque())
        assert(offset > 0 && offset < 64, "a cell's mailbox lies at \(offset) from its start: expected its first words")
        return offset
    }

    /// The clock at a sampled handler's start, or 0 when this system does not sample (another
    /// system of the process asked for the stamps). The holder of the scheduling right.
    @usableFromInline
    final func sampledHandlerStart() -> UInt64 {
        guard system.introspector.samplingInterval != 0 else { return 0 }
        return UInt64(CTroupe_monotonic_ns())
    }

    /// A sampled handler ended: records its time in the mailbox (`sentAt` to `startedAt`) and
    /// its duration into the system's histograms (and the actor's, when kept), and tells the
    /// ``SystemHooks/onMessageTimed(_:)`` observers. The holder of the scheduling right.
    @usableFromInline
    final func sampledHandlerFinished(sentAt: UInt64, startedAt: UInt64) {
        let finishedAt = UInt64(CTroupe_monotonic_ns())
        let waited = startedAt > sentAt ? startedAt - sentAt : 0
        let ran = finishedAt > startedAt ? finishedAt - startedAt : 0
        let introspector = system.introspector
        CTroupe_histogram_record(introspector.timeInMailbox, waited)
        CTroupe_histogram_record(introspector.handlerDuration, ran)
        if introspector.perActorHistograms {
            let histograms = ownHistogramsCreatingIfNeeded
            CTroupe_histogram_record(histograms.timeInMailbox, waited)
            CTroupe_histogram_record(histograms.handlerDuration, ran)
        }
        system.hooks.messageTimed(
            address, timeInMailbox: .nanoseconds(Int64(clamping: waited)),
            handlerDuration: .nanoseconds(Int64(clamping: ran)))
    }

    /// Runs `body` with the context an envelope carried (its side word, an annotation's
    /// address) current, through the system's ``MessageContextPropagation``; `body` gets the
    /// envelope's sampled send time (0 when not sampled). Takes the annotation's retain. The
    /// holder of the scheduling right.
    @usableFromInline
    final func withCarriedContext(
        _ word: UInt64, messageType: any Any.Type, isAsk: Bool, _ body: (UInt64) -> Void
    ) {
        let annotation = MessageAnnotation.take(word)
        guard let propagation = system.contextPropagation else {
            body(annotation.sentAt)
            return
        }
        let delivery = MessageDelivery(actor: address, messageType: messageType, isAsk: isAsk)
        var ran = false
        propagation.withContext(annotation.context, delivery: delivery) {
            requireValidUse(!ran, "MessageContextPropagation.withContext called its handler twice")
            ran = true
            body(annotation.sentAt)
        }
        requireValidUse(ran, "MessageContextPropagation.withContext returned without calling its handler")
    }

    /// The cell's histograms, made now if needed. The holder of the scheduling right.
    private var ownHistogramsCreatingIfNeeded: CellHistograms {
        if let existing = ownHistograms { return existing }
        // Safety: the cell's one retain of its histograms, given back by `releaseOwnHistograms` in the
        // cell's deinit; only the holder of the scheduling right makes them, once.
        let made = Unmanaged.passRetained(CellHistograms())
        histogramsAddress.store(UInt(bitPattern: made.toOpaque()), ordering: .releasing)
        return made.takeUnretainedValue()
    }

    /// The cell's histograms, if it has any. Any thread (the cell keeps them until it goes).
    var ownHistograms: CellHistograms? {
        // Safety: a non-zero address is the histograms the cell keeps retained until its deinit, and the
        // caller holds the cell.
        guard let raw = UnsafeRawPointer(bitPattern: histogramsAddress.load(ordering: .acquiring)) else { return nil }
        return Unmanaged<CellHistograms>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Frees the histograms; from the cell's deinit.
    func releaseOwnHistograms() {
        // Safety: from the cell's deinit: gives back the one retain taken when the histograms were made.
        guard let raw = UnsafeRawPointer(bitPattern: histogramsAddress.load(ordering: .acquiring)) else { return }
        Unmanaged<CellHistograms>.fromOpaque(raw).release()
    }

    /// Envelopes taken from the mailbox so far (user and system; counted by the mailbox as
    /// each batch is popped). Any thread.
    var messagesProcessed: UInt64 { CTroupe_mailbox_popped(mailbox) }

    /// The actor's state for a snapshot, given whether a worker runs it now. Any thread; a
    /// racy observation.
    func observedState(running: Bool) -> ActorSnapshot.State {
        if running { return .running }
        if flags.contains(.suspended) { return .suspended }
        if system.isShuttingDown
            || !Lifecycle(rawValue: lifecycle.load(ordering: .acquiring)).isDisjoint(with: [.abandoned])
        {
            return .stopping
        }
        return CTroupe_mailbox_is_scheduled(mailbox) ? .scheduled : .idle
    }

    /// Messages in the mailbox when it counts them. Any thread.
    var observedMailboxDepth: Int? {
        let depth = CTroupe_mailbox_depth(mailbox)
        return depth < 0 ? nil : Int(depth)
    }

    var observedHasPendingMessages: Bool { !CTroupe_mailbox_is_empty(mailbox) }
}
