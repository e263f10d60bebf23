import NIOCore
import Troupe
import TroupeCluster
import TroupeClusterMembership
import TroupeVirtualActors

extension ClusterEntityRegion: EntityInbox {
    // MARK: Members

    /// A new listing of the kind's hosts: a new view (keeping the line to each node still
    /// there), the lines to nodes gone closed (their queued items routed again), and the
    /// activations here whose identity now belongs elsewhere passivated.
    func update(members hosts: [EntityHost]) {
        let me = cluster.node
        let left = hasLeft.load(ordering: .acquiring)
        let (next, closed) = view.withLock { view -> (PlacementView, [Outbox]) in
            var members: [PlacementView.Member] = []
            var seen = Set<ClusterNode>()
            for host in hosts {
                let node = host.id.node
                guard seen.insert(node).inserted else { continue }
                if node == me {
                    if !left { members.append(.init(node: me, outbox: nil)) }
                } else if let existing = view.member(node), existing.outbox?.host.id == host.id {
                    members.append(existing)
                } else {
                    // A node new to the kind, or whose region was made again (a new host).
                    members.append(.init(node: node, outbox: makeOutbox(to: node, host: host)))
                }
            }
            let kept = Set(members.compactMap { $0.outbox.map(ObjectIdentifier.init) })
            let closed = view.members.compactMap { old in
                old.outbox.flatMap { kept.contains(ObjectIdentifier($0)) ? nil : $0 }
            }
            view = PlacementView(members: members)
            return (view, closed)
        }
        for outbox in closed { outbox.close() }
        let moved = local.passivate { next.owner(of: $0)?.node != me }
        if moved > 0 {
            counters.handedOff.add(moved, ordering: .relaxed)
            logger.debug("members changed: \(moved) activations passivated, their identities moved")
        }
    }

    private func makeOutbox(to node: ClusterNode, host: EntityHost) -> Outbox {
        Outbox(node: node, host: host, maximumFrameSize: cluster.settings.maximumFrameSize) {
            [weak self] batch, error in
            self?.failed(batch, sentTo: node, error: error)
        }
    }

    /// A batch that did not reach `node`: never sent (`error` nil: its line closed as `node`
    /// left), so routed again by the current view; or its call failed, so it may or may not
    /// have been handled: counted as lost, and its requests failed.
    private func failed(_ batch: EntityBatch, sentTo node: ClusterNode, error: (any Error)?) {
        guard let error else {
            for envelope in batch.envelopes { route(envelope) }
            for answer in batch.answers { logger.debug("answer \(answer.askID) not sent: \(node) left") }
            return
        }
        let reason = "\(error)"
        counters.lost.add(batch.envelopes.count, ordering: .relaxed)
        logger.warning("\(batch.count) items lost on their way to \(node): \(reason)")
        for envelope in batch.envelopes where envelope.askID != 0 {
            guard let origin = envelope.origin else { continue }
            answer(
                EntityAnswer(
                    askID: envelope.askID, code: .failed,
                    payload: Array(ClusterEntityError.lostInTransit(node: "\(node)", reason: reason).description.utf8)),
                to: origin)
        }
    }

    // MARK: Sending

    /// Sends `envelope` towards its owner: here, or the owner's line. Nothing but this node
    /// holding the kind (after a leave, or when no member does) makes it undeliverable.
    func route(_ envelope: EntityEnvelope) {
        let current = view.withLock { $0 }
        guard let owner = current.owner(of: envelope.key) else {
            undeliverable(envelope, reason: "no node holds the kind \(name)")
            return
        }
        if let outbox = owner.outbox {
            counters.sent.add(1, ordering: .relaxed)
            outbox.send(envelope)
        } else {
            deliverHere(envelope)
        }
    }

    func undeliverable(_ envelope: EntityEnvelope, reason: String) {
        counters.undeliverable.add(1, ordering: .relaxed)
        logger.warning("a message for \(name)/\(envelope.key) is undeliverable: \(reason)")
        if envelope.askID != 0, let origin = envelope.origin {
            answer(EntityAnswer(askID: envelope.askID, code: .undeliverable, payload: Array(reason.utf8)), to: origin)
        }
    }

    func encode<Value: Encodable>(_ value: Value) throws(ClusterEntityError) -> [UInt8] {
        var buffer = ByteBuffer()
        do {
            try cluster.settings.coder.encode(value, into: &buffer)
        } catch {
            throw .serialization(type: String(reflecting: Value.self), reason: "\(error)")
        }
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws(ClusterEntityError) -> Value {
        do {
            return try cluster.settings.coder.decode(
                type, from: ByteBuffer(bytes: bytes), userInfo: [.actorSystemKey: cluster])
        } catch {
            throw .serialization(type: String(reflecting: Value.self), reason: "\(error)")
        }
    }

    // MARK: Receiving

    /// A batch from another node's line: answers to this node's asks, then the items, each
    /// delivered here or sent on to the node that owns it, in order.
    func receive(_ batch: EntityBatch) {
        counters.received.add(batch.envelopes.count, ordering: .relaxed)
        for answer in batch.answers { complete(answer) }
        let current = view.withLock { $0 }
        for var envelope in batch.envelopes {
            if let owner = current.owner(of: envelope.key), let outbox = owner.outbox {
                if envelope.hops < Self.maximumHops {
                    envelope.hops += 1
                    counters.forwarded.add(1, ordering: .relaxed)
                    outbox.send(envelope)
                    continue
                }
                counters.afterHopLimit.add(1, ordering: .relaxed)
            }
            deliverHere(envelope)
        }
    }

    func refused(_ error: EntityWire.Malformed) {
        counters.undeliverable.add(1, ordering: .relaxed)
        logger.warning("bytes from another node refused: \(error)")
    }

    /// A direct ask from another node: delivered here and answered when the entity answers;
    /// or, when this node does not own the identity, sent on through the lines (answered
    /// there, back to the asker), with `.forwarded` in this reply.
    func receiveAsk(_ envelope: EntityEnvelope) async -> EntityAnswer {
        counters.received.add(1, ordering: .relaxed)
        if let owner = view.withLock({ $0 }).owner(of: envelope.key), let outbox = owner.outbox {
            var forwarded = envelope
            forwarded.hops += 1
            counters.forwarded.add(1, ordering: .relaxed)
            outbox.send(forwarded)
            return EntityAnswer(askID: envelope.askID, code: .forwarded, payload: [])
        }
        // Safety: resumed exactly once: the reply's outcome (answered, failed or dropped) is
        // handed on once, and every path of `deliverHere` completes the reply or answers.
        return await withUnsafeContinuation { continuation in
            deliverHere(envelope) { continuation.resume(returning: $0) }
        }
    }

    /// Hands an item to the local directory: a message as it is; a request as its message,
    /// with a reply whose outcome goes back to the asking node.
    ///
    /// `direct`, for a direct ask: where the answer goes instead of the asking node's line.
    func deliverHere(_ envelope: EntityEnvelope, direct: (@Sendable (EntityAnswer) -> Void)? = nil) {
        guard let requestName = envelope.request else {
            do {
                local.entity(envelope.key).tell(try decode(Message.self, from: envelope.payload))
            } catch {
                undeliverable(envelope, reason: "\(error)")
            }
            return
        }
        guard let origin = envelope.origin else { return undeliverable(envelope, reason: "a request with no origin") }
        let askID = envelope.askID
        let respond: @Sendable (EntityAnswer) -> Void =
            direct ?? { [weak self] answer in self?.answer(answer, to: origin) }
        guard let requestType = requestType(named: requestName) else {
            return respond(
                EntityAnswer(askID: askID, code: .unknownRequestType, payload: Array(requestName.utf8)))
        }
        do {
            let message = try requestType.message(
                decoding: envelope.payload, in: self,
                answer: { result in respond(EntityAnswer(askID: askID, outcome: result)) })
            local.entity(envelope.key).tell(message)
        } catch {
            respond(EntityAnswer(askID: askID, code: .serialization, payload: Array(error.description.utf8)))
        }
    }

    /// The request type a node named, found once by its mangled name; nil when this program
    /// has no such type, or it is not a request to this kind's `Message`.
    private func requestType(named name: String) -> (any EntityRequest<Message>.Type)? {
        if let known = requestTypes.withLock({ $0[name] }) { return known }
        guard let type = _typeByName(name) as? any EntityRequest<Message>.Type else { return nil }
        requestTypes.withLock { $0[name] = type }
        return type
    }

    /// Sends an answer to the node that asked (straight to the waiting ask when that is this
    /// node). An answer for a node no longer among the members is dropped: its ask times out.
    func answer(_ answer: EntityAnswer, to origin: ClusterNode) {
        if origin == cluster.node { return complete(answer) }
        guard let outbox = view.withLock({ $0 }).member(origin)?.outbox else {
            logger.debug("answer \(answer.askID) dropped: \(origin) no longer holds the kind")
            return
        }
        outbox.send(answer)
    }

}

extension EntityRequest {
    /// Decodes a request of this type and makes its message, whose reply's outcome goes to
    /// `answer` encoded. Called on the existential metatype the request's name resolved to.
    static func message<Region: EntityCoding>(
        decoding bytes: [UInt8], in region: Region,
        answer: @escaping @Sendable (Result<[UInt8], AskError>) -> Void
    ) throws(ClusterEntityError) -> Message {
        let request = try region.decode(Self.self, from: bytes)
        let reply = Reply<Response> { [region] result in
            switch result {
            case .success(let value):
                do {
                    answer(.success(try region.encode(value)))
                } catch {
                    answer(.failure(.failed(error)))
                }
            case .failure(let error):
                answer(.failure(error))
            }
        }
        return request.message(replyingTo: reply)
    }
}

/// The cluster's coder as a region uses it (what ``EntityRequest``'s decoding needs).
protocol EntityCoding: Sendable {
    func encode<Value: Encodable>(_ value: Value) throws(ClusterEntityError) -> [UInt8]
    func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8]) throws(ClusterEntityError) -> Value
}

extension ClusterEntityRegion: EntityCoding {}

extension EntityAnswer {
    init(askID: UInt64, outcome: Result<[UInt8], AskError>) {
        self.askID = askID
        switch outcome {
        case .success(let bytes): (code, payload) = (.value, bytes)
        case .failure(let error):
            switch error {
            case .recipientStopped: (code, payload) = (.recipientStopped, [])
            case .noReply: (code, payload) = (.noReply, [])
            case .undeliverable(.systemShutdown): (code, payload) = (.systemShutdown, [])
            case .undeliverable(let reason): (code, payload) = (.undeliverable, Array("\(reason)".utf8))
            case .timedOut: (code, payload) = (.timedOut, Array(error.description.utf8))
            case .failed(let inner): (code, payload) = (.failed, Array("\(inner)".utf8))
            default: (code, payload) = (.failed, Array(error.description.utf8))
            }
        }
    }
}
