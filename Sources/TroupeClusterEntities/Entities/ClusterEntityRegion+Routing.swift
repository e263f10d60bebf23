import NIOCore
import Troupe
import TroupeCluster
import TroupeClusterMembership
import TroupeVirtualActors

extension ClusterEntityRegion: EntityInbox {
    // MARK: Members

    /// A new listing of the kind's hosts.
    func update(members hosts: [EntityHost]) { applyView(hosts: hosts) }

    /// Another member is leaving: it owns nothing from now on.
    func leaving(_ member: UInt64) { applyView(leaving: member) }
    func load() -> NodeEntityLoad? { localLoad }

    /// Makes the view from the listing (keeping the line to each node still there, closing
    /// the lines to nodes gone, their queued items routed again), passivates the activations
    /// here whose identity now belongs elsewhere, and, when the owners changed, starts the
    /// handoff: hold new activations until the others confirm, confirm to them once this
    /// node's moved activations have stopped.
    func applyView(hosts newHosts: [EntityHost]? = nil, leaving leaver: UInt64? = nil) {
        let me = cluster.node
        let (next, closed, newcomers, change, left) = placement.withLock {
            placement -> (PlacementView, [Outbox], [Outbox], Handoff.Change?, Bool) in
            // Read under the lock: `leave()` sets it before it reads the members it announces
            // to under this lock, so a member new to this view is either among those or
            // announced to below.
            let left = hasLeft.load(ordering: .acquiring)
            if let newHosts { placement.hosts = newHosts }
            if let leaver, let host = placement.hosts.first(where: { $0.id.node.uid == leaver }) {
                placement.leavers.insert(host.id)
            }
            var members: [PlacementView.Member] = []
            var leaving: [PlacementView.Member] = []
            var newcomers: [Outbox] = []
            var seen = Set<ClusterNode>()
            for host in placement.hosts {
                let node = host.id.node
                guard seen.insert(node).inserted else { continue }
                let member: PlacementView.Member
                if node == me {
                    if left { continue }
                    member = .init(node: me, outbox: nil)
                } else if let existing = placement.view.member(node), existing.outbox?.host.id == host.id {
                    member = existing
                } else {
                    // A node new to the kind, or whose region was made again (a new host).
                    let outbox = makeOutbox(to: node, host: host)
                    newcomers.append(outbox)
                    member = .init(node: node, outbox: outbox)
                }
                if placement.leavers.contains(host.id) { leaving.append(member) } else { members.append(member) }
            }
            // Kept while the listing lacks them for a moment (a listing can drop a host and
            // show it again); a region made again on that node has a new host, not a leaver.
            if placement.leavers.count > 1_000 { placement.leavers.formIntersection(placement.hosts.map(\.id)) }
            let old = placement.view
            placement.viewsMade += 1
            let next = PlacementView(members: members, leaving: leaving, number: placement.viewsMade)
            let kept = Set(next.confirmers.compactMap { $0.outbox.map(ObjectIdentifier.init) })
            let closed = (old.members + old.leaving).compactMap { member in
                member.outbox.flatMap { kept.contains(ObjectIdentifier($0)) ? nil : $0 }
            }
            placement.view = next
            let confirmers = Dictionary(
                next.confirmers.map { ($0.node.uid, $0.outbox?.host.id.number ?? 0) }, uniquingKeysWith: max)
            let change = placement.handoff.viewChanged(fingerprint: next.fingerprint, confirmers: confirmers)
            if let change, change.isNew {
                placement.drained = nil
                placement.handoffStarted = change.confirmed ? nil : (change.generation, .now)
                releaseParked(adopting: next, in: &placement)
            }
            let drained = placement.drained == next.fingerprint
            sendMarkers(of: next, isNew: change?.isNew == true, newcomers: newcomers, drained: drained)
            return (next, closed, newcomers, change, left)
        }
        for outbox in closed { outbox.close() }
        if left {
            // A member that this node heard of after announcing its leave must hear it too:
            // without it, that member counts this node as an owner, and its view and the others'
            // never agree until this node checks out (a join at the moment of a leave).
            for outbox in newcomers { Task { await self.announceLeaving(to: outbox) } }
        }
        if let change {
            logger.debug(
                "members: owners \(String(next.fingerprint, radix: 16)) (generation \(change.generation), new: \(change.isNew), confirmed: \(change.confirmed)): \(next.members.map(\.node)), leaving \(next.leaving.map(\.node)); lines closed: \(closed.count), opened: \(newcomers.count)"
            )
        }
        let moved = local.passivate { next.owner(of: $0)?.node != me }
        if moved > 0 {
            counters.handedOff.add(moved, ordering: .relaxed)
            logger.debug("members changed: \(moved) activations passivated, their identities moved")
        }
        guard let change else { return }
        if change.confirmed {
            flush(generation: change.generation)
        } else if change.isNew {
            scheduleTimeout(of: change.generation)
        }
        if change.isNew { startConfirming(next, generation: change.generation) }
    }

    /// Sends `next`'s markers, under the placement's lock (`placement` is the lock's value),
    /// so that they leave in the order the views were adopted. Views are applied from several
    /// threads; sent after the lock, a marker of older owners could follow a newer one on the
    /// line, replace it at the receiver, and leave it waiting for this node's marker of the
    /// owners it has until the handoff timeout (1 in 50 join-and-leave runs, 2026-11-28).
    ///
    /// Safety of sending under the lock: `Outbox.send` takes only the line's own lock, and a
    /// closed line hands a signal to `failed`, which routes only messages: nothing here takes
    /// the placement's lock again.
    private func sendMarkers(of next: PlacementView, isNew: Bool, newcomers: [Outbox], drained: Bool) {
        let marker = signal(.marker, of: next.fingerprint)
        if isNew {
            // From here on this node routes by these owners: every other member hears so
            // behind what this node sent it before.
            for member in next.confirmers { member.outbox?.send(marker: marker, of: next.number) }
        } else {
            // The same owners. A member whose region was made again (a new line) has had
            // neither this node's marker nor, if it went out already, its confirmation.
            for outbox in newcomers {
                outbox.send(marker: marker, of: next.number)
                if drained { outbox.send(signal(.confirm, of: next.fingerprint)) }
            }
        }
    }

    /// Tells `outbox`'s member that this node is leaving the kind; returns once it has heard.
    func announceLeaving(to outbox: Outbox) async {
        do {
            try await outbox.host.announceLeaving(member: cluster.node.uid)
        } catch {
            // That member learns of the leave from the check-out instead; until then it waits
            // for this node's confirmation as for any member's.
            logger.warning("leaving: \(outbox.node) did not take the announcement: \(error)")
        }
    }

    /// A handoff signal from this node's region.
    private func signal(_ kind: HandoffSignal.Kind, of fingerprint: UInt64) -> EntityEnvelope {
        .signal(
            HandoffSignal(kind: kind, fingerprint: fingerprint, member: cluster.node.uid, incarnation: host.id.number))
    }

    /// Confirms `view` to every other member once this node may: when every other member's
    /// marker of it has come (what they sent here before is here, and routed by `view`), and
    /// none of the identities `view` moved away runs here any more (passivated, again if a
    /// message that reached one meanwhile started it again). The items held here for those
    /// identities go to their owners first, in the same lines. Stops when the view changes.
    ///
    /// Views are applied from several threads (the listing, another member's announcement, a
    /// leave): a task started for an older generation than the one running is cancelled, not
    /// installed (it would wait for a view that never comes back, and the newer one's task
    /// with it).
    private func startConfirming(_ view: PlacementView, generation: UInt64) {
        let task = Task { [weak self] in
            var markersCame = false
            while !markersCame {
                guard let region = self, !Task.isCancelled else { return }
                markersCame = region.placement.withLock { placement in
                    placement.view.fingerprint == view.fingerprint && placement.handoff.markersMissing.isEmpty
                }
                if !markersCame { try? await Task.sleep(for: .milliseconds(1)) }
            }
            while true {
                guard let region = self, !Task.isCancelled else { return }
                if region.drainMoved(view) { break }
                try? await Task.sleep(for: .milliseconds(1))
            }
            self?.confirm(view, generation: generation)
        }
        confirming.withLock { running in
            guard (running?.generation ?? 0) < generation else { return task.cancel() }
            running?.task.cancel()
            running = (generation, task)
        }
    }

    /// Passivates the activations here that `view` gives to other nodes; true when none runs.
    private func drainMoved(_ view: PlacementView) -> Bool {
        let me = cluster.node
        let notOwned: (String) -> Bool = { view.owner(of: $0)?.node != me }
        guard local.activations(where: notOwned) > 0 else { return true }
        let again = local.passivate(where: notOwned)
        if again > 0 { counters.handedOff.add(again, ordering: .relaxed) }
        return false
    }

    private func confirm(_ view: PlacementView, generation: UInt64) {
        let me = cluster.node
        let moved = placement.withLock { placement -> [Handoff.Held]? in
            guard placement.handoff.generation == generation else { return nil }
            placement.drained = view.fingerprint
            return placement.handoff.takeHeld { view.owner(of: $0.key)?.node != me }
        }
        guard let moved else { return }
        for item in moved { reroute(item) }
        let confirm = signal(.confirm, of: view.fingerprint)
        // Sent under the lock, and only while `view` is still this node's: a confirmation of
        // older owners must not follow a newer view's marker or confirmation on a line (as
        // with markers, see `sendMarkers`; the same safety of sending under the lock).
        let confirmed = placement.withLock { placement -> Bool in
            placement.handoff.routed(moved)
            guard placement.handoff.generation == generation else { return false }
            var sent: [(Outbox, UInt64)] = []
            for outbox in placement.view.confirmers.compactMap(\.outbox) {
                outbox.send(confirm)
                sent.append((outbox, outbox.mark()))
            }
            confirmations.withLock { $0 = (generation, sent) }
            return true
        }
        logger.debug(
            "confirming owners \(String(view.fingerprint, radix: 16)) (generation \(generation))\(confirmed ? "" : ": superseded, not sent")"
        )
    }

    /// A handoff signal from another member, in line with what it sent before.
    private func received(_ signal: HandoffSignal) {
        logger.debug(
            "\(signal.kind) of owners \(String(signal.fingerprint, radix: 16)) from \(signal.member) (incarnation \(signal.incarnation))"
        )
        switch signal.kind {
        case .marker:
            let caughtUp = placement.withLock { placement -> [Handoff.Held] in
                placement.handoff.marker(
                    signal.member, incarnation: signal.incarnation, fingerprint: signal.fingerprint)
                // A line ahead of this node: what it sends next waits until this node adopts.
                let wasAhead = placement.ahead[signal.member] != nil
                placement.ahead[signal.member] =
                    placement.adopted.contains(signal.fingerprint) ? nil : signal.fingerprint
                guard wasAhead, placement.ahead[signal.member] == nil else { return [] }
                // The line is back at owners this node has adopted (its node had routed by owners
                // this node never adopted, then heard of what this node had: a leave announced
                // to it late). What it parked goes on now, before what it sends after this
                // marker: not at this node's next change of members, or after the timeout.
                return placement.releaseParked(from: signal.member)
            }
            routeParked(caughtUp)
        case .confirm:
            confirmed(by: signal.member, incarnation: signal.incarnation, fingerprint: signal.fingerprint)
        }
    }

    /// Another member's confirmation: when it completes the current view's, what was held
    /// goes on.
    func confirmed(by member: UInt64, incarnation: UInt64, fingerprint: UInt64) {
        let (complete, generation) = placement.withLock {
            ($0.handoff.confirm(member, incarnation: incarnation, fingerprint: fingerprint), $0.handoff.generation)
        }
        if complete { flush(generation: generation) }
    }

    /// After ``handoffTimeout``, a view still waiting for confirmations counts as confirmed:
    /// a member that never answers (gone without the receptionist knowing yet, or stuck) must
    /// not stop every activation here for ever. Logged, and counted.
    private func scheduleTimeout(of generation: UInt64) {
        let timeout = handoffTimeout
        Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard let self else { return }
            let (expired, state) = self.placement.withLock { placement in
                let state = placement.handoffState
                return (placement.handoff.timedOut(generation: generation), state)
            }
            guard expired else { return }
            self.logger.warning(
                "handoff of \(self.name): not every member confirmed the new members within \(timeout); starting activations anyway (\(state); confirmed by this node to all: \(self.confirmations.withLock { $0.generation } == generation))"
            )
            self.flush(generation: generation)
        }
    }

    /// Routes again, in order, what waited for `generation`'s view, until nothing is left
    /// (then the view is settled) or a newer view takes over.
    func flush(generation: UInt64) {
        while true {
            let (step, started) = placement.withLock { placement in
                let step = placement.handoff.flushStep(generation: generation)
                guard case .done = step, let started = placement.handoffStarted, started.generation == generation
                else { return (step, nil as ContinuousClock.Instant?) }
                placement.handoffStarted = nil
                return (step, started.at)
            }
            switch step {
            case .route(let items):
                for item in items { reroute(item) }
                placement.withLock { $0.handoff.routed(items) }
            case .done(let waiters):
                if let started {
                    counters.handoffs.add(1, ordering: .relaxed)
                    counters.handoffDurations.record(.now - started)
                }
                for waiter in waiters { waiter.resume() }
                return
            case .superseded:
                return
            }
        }
    }

    private func reroute(_ item: Handoff.Held) {
        let current = placement.withLock { $0.view }
        switch item {
        case .envelope(let envelope, let direct):
            guard let owner = current.owner(of: envelope.key) else {
                return undeliverable(envelope, reason: "no node holds the kind \(name)", direct: direct)
            }
            guard let outbox = owner.outbox else { return deliverNow(envelope, direct: direct) }
            forward(envelope, through: outbox, direct: direct)
        case .message(let key, let boxed):
            // Safety of the cast: only `ClusterEntityRef<Message>.tell` holds messages here.
            let message = boxed as! Message
            guard let owner = current.owner(of: key) else {
                counters.undeliverable.add(1, ordering: .relaxed)
                logger.warning("a message for \(name)/\(key) is undeliverable: no node holds the kind \(name)")
                return
            }
            guard let outbox = owner.outbox else {
                local.entity(key).tell(message)
                return
            }
            do {
                let payload = try encode(message)
                counters.sent.add(1, ordering: .relaxed)
                // Sent on by this node (held here under older owners): the new owner
                // delivers it before what this node sent it directly since.
                outbox.send(EntityEnvelope(key: key, payload: payload, hops: 1))
            } catch {
                counters.undeliverable.add(1, ordering: .relaxed)
                logger.warning("a message for \(name)/\(key) is undeliverable: \(error)")
            }
        }
    }

    /// Sends `envelope` on to the node that owns it (one hop more); a direct ask hears
    /// `.forwarded`, its answer coming through the lines.
    private func forward(
        _ envelope: EntityEnvelope, through outbox: Outbox, direct: (@Sendable (EntityAnswer) -> Void)?
    ) {
        var forwarded = envelope
        forwarded.hops += 1
        counters.forwarded.add(1, ordering: .relaxed)
        outbox.send(forwarded)
        direct?(EntityAnswer(askID: envelope.askID, code: .forwarded, payload: []))
    }

    /// Holds `item` while the view is not settled, when delivering it here now could start an
    /// activation, or pass items for its identity held before it; false when the caller
    /// delivers it (the region's local directory is asked under the placement's lock: that
    /// order, never the reverse).
    func holdIfNeeded(_ item: Handoff.Held) -> Bool {
        placement.withLock { placement in
            guard !placement.handoff.isSettled else { return false }
            let key = item.key
            guard placement.handoff.isPending(key) || !local.hasActivation(key) else { return false }
            return placement.handoff.hold(item)
        }
    }

    /// Whether a local ask to `key` must wait for the handoff (as ``holdIfNeeded(_:)`` decides).
    func mustWaitForHandoff(_ key: String) -> Bool {
        placement.withLock { placement in
            !placement.handoff.isSettled && (placement.handoff.isPending(key) || !local.hasActivation(key))
        }
    }

    /// Waits until the view is settled (for a local ask that would start an activation).
    func untilSettled() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !placement.withLock({ $0.handoff.wait(continuation) }) { continuation.resume() }
        }
    }

    /// The view, and whether it is settled, read together.
    func snapshot() -> (view: PlacementView, settled: Bool) {
        placement.withLock { ($0.view, $0.handoff.isSettled) }
    }

    /// ``snapshot()``, and whether `line` is ahead of this node.
    private func snapshot(line: UInt64) -> (view: PlacementView, settled: Bool, ahead: Bool) {
        placement.withLock { ($0.view, $0.handoff.isSettled, $0.ahead[line] != nil) }
    }

    // MARK: Parking

    /// Parks `item` when `line` is ahead of this node (its marker named owners this node has not
    /// adopted: it routed `item` by them); false when it is not (the caller routes it).
    private func park(_ item: Handoff.Held, from line: UInt64) -> Bool {
        let (parked, epoch) = placement.withLock { placement -> (Bool, UInt64?) in
            guard placement.ahead[line] != nil else { return (false, nil) }
            placement.parked.append((line, item))
            return (true, placement.parked.count == 1 ? placement.parkEpoch : nil)
        }
        guard parked else { return false }
        counters.parked.add(1, ordering: .relaxed)
        if let epoch {
            // Owners this node never adopts (its listing never shows them) must not keep these
            // for ever.
            let timeout = handoffTimeout
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.releaseParked(epoch: epoch)
            }
        }
        return true
    }

    /// At the adoption of `next` (under the placement's lock, the new view already in it):
    /// the lines at `next` are no longer ahead, and what every line ahead sent goes on, in
    /// order, by `next`: held here (this node's handoff of `next` has just begun) or sent to
    /// its owner, before anything received after.
    private func releaseParked(adopting next: PlacementView, in placement: inout Placement) {
        placement.adopted.append(next.fingerprint)
        if placement.adopted.count > 16 { placement.adopted.removeFirst() }
        placement.ahead = placement.ahead.filter { $0.value != next.fingerprint }
        guard !placement.parked.isEmpty else { return }
        let parked = placement.parked.map(\.item)
        placement.parked = []
        placement.parkEpoch += 1
        for item in parked {
            guard case .envelope(let envelope, let direct) = item else { continue }
            if let owner = next.owner(of: envelope.key), let outbox = owner.outbox {
                forward(envelope, through: outbox, direct: direct)
            } else {
                // Held here: a view just adopted is never settled at once.
                let held = placement.handoff.hold(item)
                assert(held, "a new view's handoff was settled at once")
            }
        }
    }

    /// The timeout of a parking: what is still parked goes on by this node's view, and no
    /// line counts as ahead any more.
    private func releaseParked(epoch: UInt64) {
        let parked = placement.withLock { placement -> [Handoff.Held] in
            guard placement.parkEpoch == epoch, !placement.parked.isEmpty else { return [] }
            defer {
                placement.parked = []
                placement.ahead = [:]
                placement.parkEpoch += 1
            }
            return placement.parked.map(\.item)
        }
        guard !parked.isEmpty else { return }
        logger.warning(
            "\(parked.count) items of \(name) waited \(handoffTimeout) for members this node has not heard of; routing them by its own"
        )
        routeParked(parked)
    }

    /// Routes items that were parked, in order, by this node's view now.
    private func routeParked(_ parked: [Handoff.Held]) {
        for item in parked {
            guard case .envelope(let envelope, let direct) = item else { continue }
            if let direct {
                let (current, settled) = snapshot()
                routeDirect(envelope, view: current, settled: settled, answer: direct)
            } else {
                route(envelope)
            }
        }
    }

    private func makeOutbox(to node: ClusterNode, host: EntityHost) -> Outbox {
        Outbox(node: node, host: host, sender: cluster.node.uid, maximumFrameSize: cluster.settings.maximumFrameSize) {
            [weak self] batch, error in
            self?.failed(batch, sentTo: node, error: error)
        }
    }

    /// A batch that did not reach `node`: never sent (`error` nil: its line closed as `node`
    /// left), so routed again by the current view; or its call failed, so it may or may not
    /// have been handled: counted as lost, and its requests failed.
    private func failed(_ batch: EntityBatch, sentTo node: ClusterNode, error: (any Error)?) {
        guard let error else {
            for envelope in batch.envelopes where envelope.signal == nil { route(envelope) }
            for answer in batch.answers { logger.debug("answer \(answer.askID) not sent: \(node) left") }
            return
        }
        let reason = "\(error)"
        counters.lost.add(batch.envelopes.count { $0.signal == nil }, ordering: .relaxed)
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
        while true {
            let (current, settled) = snapshot()
            guard let owner = current.owner(of: envelope.key) else {
                undeliverable(envelope, reason: "no node holds the kind \(name)")
                return
            }
            guard let outbox = owner.outbox else { return deliverHere(envelope, settled: settled) }
            // Refused when the line carried a marker of a newer view since `snapshot()`:
            // routed again by that view.
            if outbox.send(envelope, routedBy: current.number) {
                counters.sent.add(1, ordering: .relaxed)
                return
            }
        }
    }

    func undeliverable(
        _ envelope: EntityEnvelope, reason: String, direct: (@Sendable (EntityAnswer) -> Void)? = nil
    ) {
        counters.undeliverable.add(1, ordering: .relaxed)
        logger.warning("a message for \(name)/\(envelope.key) is undeliverable: \(reason)")
        let answer = EntityAnswer(askID: envelope.askID, code: .undeliverable, payload: Array(reason.utf8))
        if let direct {
            direct(answer)
        } else if envelope.askID != 0, let origin = envelope.origin {
            self.answer(answer, to: origin)
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
        counters.received.add(batch.envelopes.count { $0.signal == nil }, ordering: .relaxed)
        for answer in batch.answers { complete(answer) }
        // The view is read again only after a handoff signal (one can change the handoff's phase,
        // or make this line one that is ahead of this node).
        var (current, settled, ahead) = snapshot(line: batch.sender)
        for var envelope in batch.envelopes {
            if let signal = envelope.signal {
                received(signal)
                (current, settled, ahead) = snapshot(line: batch.sender)
                continue
            }
            if ahead {
                if park(.envelope(envelope, direct: nil), from: batch.sender) { continue }
                (current, settled, ahead) = snapshot(line: batch.sender)  // this node adopted meanwhile
            }
            guard let owner = current.owner(of: envelope.key) else {
                undeliverable(envelope, reason: "no node holds the kind \(name)")
                continue
            }
            guard let outbox = owner.outbox else {
                deliverHere(envelope, settled: settled)
                continue
            }
            envelope.hops += 1
            if envelope.hops <= Self.maximumHops {
                counters.forwarded.add(1, ordering: .relaxed)
                outbox.send(envelope)
            } else {
                retryLater(envelope)
            }
        }
    }

    /// An item that went round ``maximumHops`` nodes without finding its owner: the nodes'
    /// views disagree (a change of members spreading). Sent again, through this node's view
    /// then, after a pause; after ``maximumForwards`` forwards in all, undeliverable. Never
    /// delivered where it is not owned: that could start a second activation.
    private func retryLater(_ envelope: EntityEnvelope) {
        counters.afterHopLimit.add(1, ordering: .relaxed)
        guard envelope.hops < Self.maximumForwards else {
            return undeliverable(
                envelope, reason: "the nodes' members did not agree after \(envelope.hops) forwards")
        }
        Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(50))
            self?.route(envelope)
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
        // Safety: resumed exactly once: parked, forwarded or delivered, each path answers once
        // (a delivered request's reply hands its outcome on once, and every path of
        // `deliverHere` completes the reply or answers).
        return await withUnsafeContinuation { continuation in
            let answer: @Sendable (EntityAnswer) -> Void = { continuation.resume(returning: $0) }
            // One lock for the view and the line: parking (a second one) only when it is ahead.
            var (current, settled, ahead) = snapshot(line: envelope.origin?.uid ?? 0)
            if ahead, let origin = envelope.origin {
                if park(.envelope(envelope, direct: answer), from: origin.uid) { return }
                (current, settled, ahead) = snapshot(line: origin.uid)  // this node adopted meanwhile
            }
            routeDirect(envelope, view: current, settled: settled, answer: answer)
        }
    }

    /// A direct ask by `view`: sent on to its owner (answered `.forwarded`), or delivered here.
    private func routeDirect(
        _ envelope: EntityEnvelope, view current: PlacementView, settled: Bool,
        answer: @escaping @Sendable (EntityAnswer) -> Void
    ) {
        if let owner = current.owner(of: envelope.key), let outbox = owner.outbox {
            return forward(envelope, through: outbox, direct: answer)
        }
        deliverHere(envelope, settled: settled, direct: answer)
    }

    /// Hands an item to the local directory: a message as it is; a request as its message,
    /// with a reply whose outcome goes back to the asking node.
    ///
    /// `direct`, for a direct ask: where the answer goes instead of the asking node's line.
    /// While the view waits for confirmations (`settled` false), an item that would start an
    /// activation is held instead (see `Handoff`).
    func deliverHere(
        _ envelope: EntityEnvelope, settled: Bool, direct: (@Sendable (EntityAnswer) -> Void)? = nil
    ) {
        if !settled, holdIfNeeded(.envelope(envelope, direct: direct)) { return }
        deliverNow(envelope, direct: direct)
    }

    /// ``deliverHere(_:settled:direct:)`` past the handoff.
    func deliverNow(_ envelope: EntityEnvelope, direct: (@Sendable (EntityAnswer) -> Void)? = nil) {
        guard let requestName = envelope.request else {
            do {
                local.entity(envelope.key).tell(try decode(Message.self, from: envelope.payload))
            } catch {
                undeliverable(envelope, reason: "\(error)")
            }
            return
        }
        guard let origin = envelope.origin else {
            return undeliverable(envelope, reason: "a request with no origin", direct: direct)
        }
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
        guard let outbox = placement.withLock({ $0.view }).member(origin)?.outbox else {
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
