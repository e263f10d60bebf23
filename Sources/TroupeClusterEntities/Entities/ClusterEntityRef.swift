import Troupe
import TroupeCluster
import TroupeVirtualActors

/// A reference to an entity by identity, valid on every node of the cluster: it reaches the
/// entity's one activation on the node that owns the identity, activating it first when
/// needed. Cheap to copy, `Sendable`, hashable by identity.
///
/// Messages sent from one node to an entity arrive in the order they were sent (one batch
/// at a time per pair of nodes); across a change of members, see the module's documentation.
public struct ClusterEntityRef<Message: Codable & Sendable>: Sendable, Hashable, CustomStringConvertible {
    let region: ClusterEntityRegion<Message>
    /// The entity's key within its kind.
    public let key: String

    /// The entity's identity.
    public var id: EntityID { EntityID(kind: region.name, key: key) }

    /// Sends `message` without waiting. When this node owns the entity, the local
    /// `EntityRef`'s outcome; otherwise `.enqueued` (on its way to the owner, encoded here),
    /// or `.deadLettered(.handlerFailed(_:))` when the message cannot be encoded with the
    /// cluster's coder (the text says why).
    @discardableResult
    public func tell(_ message: Message) -> TellOutcome {
        var payload: [UInt8]?
        while true {
            let (view, settled) = region.snapshot()
            guard let owner = view.owner(of: key) else {
                region.counters.undeliverable.add(1, ordering: .relaxed)
                return .deadLettered(.handlerFailed(ClusterEntityError.noMembers(kind: region.name).description))
            }
            guard let outbox = owner.outbox else {
                // While the members' change is being confirmed, a message that would start an
                // activation here waits (see the module's documentation, "Handoff").
                if !settled, region.holdIfNeeded(.message(key: key, message)) {
                    return .enqueued
                }
                return region.local.entity(key).tell(message)
            }
            let bytes: [UInt8]
            if let payload {
                bytes = payload
            } else {
                do {
                    bytes = try region.encode(message)
                } catch {
                    return .deadLettered(.handlerFailed("\(error)"))
                }
                payload = bytes
            }
            // Refused only when the members changed since `snapshot()` and the line already
            // carries the new view's marker: routed again by the new view (in order).
            if outbox.send(EntityEnvelope(key: key, payload: bytes), routedBy: view.number) {
                region.counters.sent.add(1, ordering: .relaxed)
                return .enqueued
            }
        }
    }

    /// Asks `request` of the entity, wherever it is, and waits for the answer: at most
    /// `timeout` (for a remote entity, `ClusterSettings.callTimeout` when
    /// nil; for a local one, the actor system's ask limit, as `EntityRef.ask` does).
    ///
    /// Fails as `EntityRef.ask(timeout:_:)` does, and with `AskError.failed(_:)` wrapping a
    /// ``ClusterEntityError`` when the request could not be encoded, decoded or delivered.
    nonisolated(nonsending)
        public func ask<Request: EntityRequest>(
            _ request: Request, timeout: Duration? = nil
        ) async throws(AskError) -> Request.Response where Request.Message == Message
    {
        var (view, settled) = region.snapshot()
        while !settled, view.owner(of: key)?.outbox == nil, region.mustWaitForHandoff(key) {
            // An activation here would start before the members' change is confirmed: wait.
            await region.untilSettled()
            (view, settled) = region.snapshot()
        }
        guard let owner = view.owner(of: key) else {
            throw .failed(ClusterEntityError.noMembers(kind: region.name))
        }
        if owner.outbox == nil {
            return try await region.local.entity(key).ask(timeout: timeout) { request.message(replyingTo: $0) }
        }
        guard let name = _mangledTypeName(Request.self) else {
            throw .failed(
                ClusterEntityError.serialization(
                    type: String(reflecting: Request.self), reason: "the type has no mangled name"))
        }
        let payload: [UInt8]
        do {
            payload = try region.encode(request)
        } catch {
            throw .failed(error)
        }
        let limit = timeout ?? region.cluster.settings.callTimeout
        let bytes = try await region.askAnywhere(key: key, requestName: name, payload: payload, timeout: limit).get()
        do {
            return try region.decode(Request.Response.self, from: bytes)
        } catch {
            throw .failed(error)
        }
    }

    public var description: String { "ClusterEntityRef<\(Message.self)>(\(id))" }

    public static func == (lhs: ClusterEntityRef, rhs: ClusterEntityRef) -> Bool {
        lhs.region === rhs.region && lhs.key == rhs.key
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(region))
        hasher.combine(key)
    }
}
