import Synchronization
internal import CTroupe

/// A cell that accepts `Message`: the typed send path, independent of the actor's definition.
@usableFromInline
class MailboxCell<Message: Sendable>: AnyCell, @unchecked Sendable {  // inherits AnyCell's contract
    /// The send path of `tell`, compiled into the caller's module for its concrete message type
    /// (`@inlinable`): the payload is moved into the envelope by specialised code, and the rest
    /// is two non-generic calls into the runtime (check and allocate; push and schedule). Any
    /// thread; wait-free apart from the envelope allocator's rare refill.
    @inlinable @inline(__always)
    final func tell(_ message: consuming Message) -> TellOutcome {
        guard let payload = allocateForFastSend(payloadSize: MemoryLayout<Message>.size) else {
            return tellSlowly(message)
        }
        // Safety: `allocateForFastSend` returned room for `Message`'s size at a 16-byte-aligned offset
        // (enough for any Swift type) in a fresh envelope that only this thread holds until the push.
        payload.initializeMemory(as: Message.self, to: message)
        pushUserEnvelope(payload: payload)
        return .enqueued
    }

    /// The send path of asks and of code inside the runtime. Any thread.
    @usableFromInline
    final func send(_ message: consuming Message, askToken: AskToken? = nil) -> TellOutcome {
        guard _fastPath(acceptsFastSend) else { return sendSlowly(message, askToken: askToken, context: .capture) }
        push(Envelope.make(message, kind: UInt32(CTroupe_envelope_kind_user), askToken: askToken), reserved: false)
        return .enqueued
    }

    /// `tell` to a stopped recipient, during shutdown, to a bounded mailbox, or in a system that
    /// propagates a context.
    @usableFromInline
    final func tellSlowly(_ message: consuming Message) -> TellOutcome {
        sendSlowly(message, askToken: nil, context: .capture)
    }

    /// Sends `message` carrying `context` (captured earlier: a non-blocking ask's reply) rather
    /// than the sender's current one, when the system propagates contexts. Any thread.
    final func send(_ message: consuming Message, carrying context: (any Sendable)?) -> TellOutcome {
        sendSlowly(message, askToken: nil, context: .given(context))
    }

    /// Stopped recipient, shutdown, a bounded mailbox, or context propagation.
    private func sendSlowly(_ message: consuming Message, askToken: AskToken?, context: CarriedContext) -> TellOutcome {
        // Shutdown first: once it began, every refusal says so, whether or not the
        // recipient has stopped yet.
        if !system.isAccepting {
            return reject(message, .systemShutdown, askToken: askToken)
        }
        if Lifecycle(rawValue: lifecycle.load(ordering: .relaxed)).contains(.stopped) {
            return reject(message, .recipientStopped, askToken: askToken)
        }
        var outcome = TellOutcome.enqueued
        var reserved = false
        if mailboxMode != .unbounded, let config {
            // The reservation never takes the depth above the capacity (CTroupe.h), so a bounded
            // mailbox holds at most `capacity` user messages at every moment.
            let capacity = Int64(config.capacity)
            if !CTroupe_mailbox_try_reserve(mailbox, capacity) {
                switch config.overflow {
                case .dropNewest, .fail:
                    return reject(message, .mailboxFull(config.overflow), askToken: askToken)
                case .dropOldest:
                    // Make room now, on the sender's thread: the oldest pending user message is
                    // taken out and dead-lettered before this send returns.
                    repeat {
                        if let dropped = CTroupe_mailbox_drop_oldest(mailbox) {
                            deadLetter(Envelope(raw: dropped), .mailboxFull(.dropOldest))
                            outcome = .enqueuedDroppingOldest
                        } else {
                            // Full of reservations whose envelopes are still being pushed.
                            CTroupe_cpu_relax()
                        }
                    } while !CTroupe_mailbox_try_reserve(mailbox, capacity)
                }
            }
            reserved = true
        }
        let envelope = Envelope.make(message, kind: UInt32(CTroupe_envelope_kind_user), askToken: askToken)
        if system.contextPropagation != nil { attachContext(to: envelope, context) }
        push(envelope, reserved: reserved)
        return outcome
    }

    private func reject(_ message: consuming Message, _ reason: DeadLetterReason, askToken: AskToken?) -> TellOutcome {
        // Counted first: an asker that reads the count after its error sees this dead letter.
        let kept = message
        system.deadLetters.record(reason, recipient: address, message: kept)
        askToken?.failDelivery(reason)
        return .deadLettered(reason)
    }

    // Operations of the actor's own context that depend on its message type; ActorCell
    // implements them. Called only by the holder of the scheduling right.
    func startTimer(key: TimerKey, message: Message, delay: Duration, interval: Duration?) { fatalError("subclass") }
    func cancelTimer(key: TimerKey) { fatalError("subclass") }
    func watch(_ target: AnyCell, mapping: NoticeMapping<Message>) { fatalError("subclass") }
    func unwatch(_ target: AnyCell) { fatalError("subclass") }

    /// Dead-letters a user envelope its caller owns: popped by the consumer, or taken out of a
    /// full drop-oldest mailbox by a sender.
    final func deadLetter(_ envelope: Envelope, _ reason: DeadLetterReason) {
        let token = envelope.askToken
        let message = envelope.take(as: Message.self)
        // Counted first: an asker that reads the count after its error sees this dead letter.
        system.deadLetters.record(reason, recipient: address, message: message)
        if let token {
            token.failDelivery(reason)
        }
    }
}
