import Synchronization
internal import CTroupe

/// The turn: pop a batch, move each message out of its envelope, run the handler.
///
/// This is the per-message path, so it is `@inlinable`: ``ActorDefinition/_turn(_:)``'s
/// default implementation calls it, and the compiler builds that witness in the module that
/// declares the definition, for its concrete types. The message is then moved with a plain
/// copy and `receive` is a direct call (often inlined), where the generic form paid
/// associated-type lookups, value-witness calls and a witness thunk per message. Everything
/// that is not the common case (system messages, lifecycle bits, failures, stop and crash
/// requests, suspension) is a call into the runtime's generic code, so the inlined part stays
/// small and uses only the names below that are `@usableFromInline`.
///
/// Called only by the holder of the mailbox's scheduling right (the worker running the cell).
extension ActorCell {
    /// Runs one turn of at most `limit` envelopes. Returns whether the caller keeps the
    /// scheduling right (more is pending) and must run or queue the cell again. Returning
    /// false while suspended also keeps the right: the restart timer reschedules the cell.
    @inlinable
    final func turn(buffer: UnsafeEnvelopeBuffer, limit: Int, progress: UnsafeTurnProgress) -> Bool {
        // Debug builds only (`assert` drops its argument otherwise, without a warning).
        assert(markTurnThread(entering: true))
        defer { assert(markTurnThread(entering: false)) }
        if _slowPath(flags.intersection([.started, .suspended]) != .started) {
            if !beginTurnSlowly() { return suspensionTurnEnded() }
        }
        let ran = forEachPoppedEnvelope(buffer: buffer, limit: limit, progress: progress) { buffer, index, count in
            // Safety: `popEnvelopes` filled indices 0..<count with non-nil envelopes.
            handle(buffer[index].unsafelyUnwrapped)
            if _slowPath(flags.contains(.suspended)) {
                // A delayed restart began: keep the rest of the batch for the fresh instance.
                holdForResumption(buffer, from: index + 1, to: count)
                return false
            }
            return true
        }
        if _slowPath(!ran) { return suspensionTurnEnded() }
        if _slowPath(flags.contains(.invalidationCheck)) { checkSelfInvalidation() }
        return finishTurn()
    }

    /// One popped envelope. The common case, a user message while no lifecycle bit is set, is
    /// handled here; the rest by ``handleSlowly(_:)``. An envelope whose side word is not 0
    /// (sampled, or carrying a context) goes through ``handleAnnotated(_:)``, tested before
    /// anything else is read, so that no value lives across the common path's calls.
    @inlinable @inline(__always)
    final func handle(_ envelope: UnsafeMutableRawPointer) {
        guard _fastPath(EnvelopeLayout.isUser(envelope) && lifecycle.load(ordering: .relaxed) == 0) else {
            handleSlowly(envelope)
            return
        }
        if _slowPath(EnvelopeLayout.sideWord(envelope) != 0) {
            handleAnnotated(envelope)
            return
        }
        let token = EnvelopeLayout.askToken(envelope)
        // Safety: a user envelope in this mailbox carries a `Message` (``ActorRef`` is typed),
        // moved out exactly once, before the envelope is freed.
        let message = EnvelopeLayout.payload(envelope).assumingMemoryBound(to: Message.self).move()
        Envelope.free(envelope)
        deliver(message, token: token)
    }

    /// A user envelope whose side word is set (``EnvelopeLayout/sideWord(_:)``): an odd word is a sampled send time (the
    /// time in the mailbox and the handler's duration go to the histograms); an even one is a
    /// carried context (``MessageAnnotation``), current while the handler runs. Out of line,
    /// so that the common path stays small.
    @inlinable @inline(never)
    final func handleAnnotated(_ envelope: UnsafeMutableRawPointer) {
        let word = EnvelopeLayout.sideWord(envelope)
        let token = EnvelopeLayout.askToken(envelope)
        // Safety: a user envelope in this mailbox carries a `Message` (``ActorRef`` is typed),
        // moved out exactly once, before the envelope is freed.
        let message = EnvelopeLayout.payload(envelope).assumingMemoryBound(to: Message.self).move()
        Envelope.free(envelope)
        if EnvelopeLayout.isSendTime(word) {
            deliverTimed(message, token: token, sentAt: word)
        } else {
            withCarriedContext(word, messageType: Message.self, isAsk: token != nil) { sentAt in
                if sentAt != 0 {
                    deliverTimed(message, token: token, sentAt: sentAt)
                } else {
                    deliver(message, token: token)
                }
            }
        }
    }

    /// Delivers a sampled message, timing it.
    @inlinable
    final func deliverTimed(_ message: Message, token: AskToken?, sentAt: UInt64) {
        let started = sampledHandlerStart()
        deliver(message, token: token)
        if started != 0 { sampledHandlerFinished(sentAt: sentAt, startedAt: started) }
    }

    /// Runs the handler on one user message (from the mailbox, a timer, a notice or a retry).
    @inlinable @inline(__always)
    final func deliver(_ message: Message, token: AskToken?, isRetry: Bool = false) {
        do {
            try withInstance { try $0.receive(message, context: ActorContext(cell: self)) }
        } catch {
            handlerFailed(error, message: message, token: token, isRetry: isRetry)
            return
        }
        if _slowPath(!flags.isDisjoint(with: [.stopRequested, .crashRequested])) {
            actOnHandlerRequests(message: message, token: token, isRetry: isRetry)
            return
        }
        // Handled: the envelope's retain of the ask state ends here.
        // Safety: the handler returned and asked for no stop or crash, so the envelope's token retain
        // ends here, once (`AskToken`'s contract): no failure or dead letter took it.
        token?.release()
    }

    /// The handler threw.
    @usableFromInline
    final func handlerFailed(_ error: any Error, message: Message, token: AskToken?, isRetry: Bool) {
        failed(error, message: message, token: token, isRetry: isRetry)
        if _slowPath(flags.contains(.stopRequested)) { stopNow(.stopped) }
    }

    /// The handler returned after ``ActorContext/crash(_:)`` or ``ActorContext/stop()``.
    @usableFromInline
    final func actOnHandlerRequests(message: Message, token: AskToken?, isRetry: Bool) {
        if flags.contains(.crashRequested) {
            flags.remove(.crashRequested)
            let error = extras?.pendingCrash ?? RestartRequested()
            extras?.pendingCrash = nil
            failed(error, message: message, token: token, isRetry: isRetry)
            if flags.contains(.stopRequested) { stopNow(.stopped) }
            return
        }
        stopNow(.stopped)
        // Safety: the handler succeeded, and `stopNow` fails only a kept retry's token, never this one
        // (a retry leaves `extras` before it is delivered), so the token's retain ends here, once.
        token?.release()
    }

    /// A delayed restart began in the middle of a batch: the envelopes after it wait for the
    /// fresh instance, in order.
    @usableFromInline
    final func holdForResumption(_ buffer: UnsafeEnvelopeBuffer, from start: Int, to end: Int) {
        for index in start..<end {
            // Safety: `popEnvelopes` filled the indices below `end` (the batch's count) with non-nil
            // envelopes the C allocator made as `CTroupe_envelope`s; they wait in `held` until the resume.
            extras!.held.append(buffer[index].unsafelyUnwrapped.assumingMemoryBound(to: CTroupe_envelope.self))
        }
    }
}
