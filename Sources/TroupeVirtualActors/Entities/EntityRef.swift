import Troupe

/// A reference to an entity by identity: valid whether or not the entity is active, it reaches
/// the entity's one activation, activating it first when needed. Cheap to copy, `Sendable`,
/// hashable by identity.
///
/// A send to an active entity passes a gate of two atomic operations and goes straight to the
/// activation's mailbox; a send to an entity that is not active, or is being passivated, goes
/// through its region, which keeps it until the next activation. Messages from one sender
/// arrive in send order, across passivations too.
public struct EntityRef<Message: Sendable>: Sendable, Hashable, CustomStringConvertible {
    @usableFromInline let region: EntityRegion<Message>
    @usableFromInline let slot: EntitySlot<Message>

    init(region: EntityRegion<Message>, slot: EntitySlot<Message>) {
        self.region = region
        self.slot = slot
    }

    /// The entity's identity.
    public var id: EntityID { EntityID(kind: region.name, key: slot.key) }

    /// Sends `message` without waiting. To an active entity, the activation's `TellOutcome`;
    /// while the entity is being activated or passivated, `.enqueued`: the region holds the
    /// message for the next activation.
    @discardableResult
    @inlinable
    public func tell(_ message: consuming Message) -> TellOutcome {
        if slot.gate.enter() {
            let outcome = slot.tellActivation(message)
            region.leave(slot, sent: true)
            return outcome
        }
        region.leave(slot, sent: false)
        return region.tellThroughDirectory(slot, message)
    }

    /// Sends a request built around a `Reply` to the entity, activating it first if needed,
    /// and waits for the answer. Fails as `ActorRef.ask(timeout:_:)` does, and with
    /// `AskError.undeliverable(.systemShutdown)` when the entity must be activated while its
    /// system shuts down. The time limit starts when the request reaches an activation; the
    /// wait for one is bounded by the previous activation's last handler.
    ///
    /// A request that reaches an activation as it stops on its own (its failure, or
    /// `context.stop()`), and so is never handled, goes to the next activation: the ask waits
    /// for the region to see the stop and asks again, up to ``stoppedActivationRetries`` times
    /// (an entity that stops before every request then fails the ask with
    /// `AskError.recipientStopped`). A tell in that moment is a dead letter, counted as such.
    @inlinable
    nonisolated(nonsending)
        public func ask<Value: Sendable>(
            timeout: Duration? = nil, _ request: (Reply<Value>) -> Message
        ) async throws(AskError) -> Value
    {
        var slot = slot
        var retries = 0
        while true {
            if slot.gate.enter() {
                // The gate stays entered until the answer, so a passivation waits for it.
                let current = slot
                let result: Result<Value, AskError>
                do throws(AskError) {
                    result = .success(try await current.askActivation(timeout: timeout, request))
                } catch {
                    result = .failure(error)
                }
                if case .failure(.recipientStopped) = result, retries < Self.stoppedActivationRetries {
                    retries += 1
                    let stopped = current.activationStorage.pointee  // read inside the gate
                    region.leave(current, sent: true)
                    // The region watches every activation from its spawn, so it is normally told
                    // of the stop (and closes the gate) before this later watch; if not, the next
                    // attempt finds the same stopped activation and waits again.
                    _ = await stopped.terminated()
                    continue
                }
                region.leave(current, sent: true)
                return try result.get()
            }
            region.leave(slot, sent: false)
            slot = try await region.awaitActivation(slot)
        }
    }

    /// How many times one ask goes to the next activation after finding its activation stopped.
    public static var stoppedActivationRetries: Int { 3 }

    public var description: String { "EntityRef<\(Message.self)>(\(id))" }

    public static func == (lhs: EntityRef, rhs: EntityRef) -> Bool {
        lhs.region === rhs.region && lhs.slot.key == rhs.slot.key
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(region))
        hasher.combine(slot.key)
    }
}
