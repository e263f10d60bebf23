internal import TroupeLocks
import TroupeCluster
import TroupeClusterMembership

/// The ordered line from this node's region to one other node's host: items are queued in
/// send order and leave in batches, one batch in flight at a time, so a node's sends to an
/// entity arrive in order. While a batch is in flight the next one fills, so the line's
/// throughput grows with load (one round trip per batch, not per message).
final class Outbox: Sendable {
    let node: ClusterNode
    let host: EntityHost
    /// This node's uid, stamped on every batch.
    let sender: UInt64
    /// Batches up to this many items, or about this many bytes (below the cluster's frame
    /// limit, with room for the frame's header).
    let maximumItems = 512
    let maximumBytes: Int
    private let state = Locked(State())
    /// Called with a batch whose call failed, and the error (the batch may or may not have
    /// been handled), and with the items still queued when the outbox closes (not sent).
    private let onFailure: @Sendable (EntityBatch, _ error: (any Error)?) -> Void

    private struct State {
        var envelopes = Queue<EntityEnvelope>()
        var answers = Queue<EntityAnswer>()
        var sending = false
        var closed = false
        /// A direct request's call is in flight (at most one: more would each cost a round
        /// trip of their own, where the line batches them).
        var directInFlight = false
        /// Items queued since the line opened, and those handed over: in batches whose call
        /// returned or failed (in queue order: one batch at a time), or taken back at the close.
        var queued: UInt64 = 0
        var handedOver: UInt64 = 0
        /// The number of the latest view whose marker this line carries (``PlacementView/number``):
        /// the other node takes what follows the marker as routed by that view's owners.
        /// Never newer than the region's current view (markers are sent only for the view just
        /// adopted, under the placement's lock): a send refused here finds a view at least as
        /// new when it reads the members again, so its retry is accepted.
        var markedView: UInt64 = 0

        var isEmpty: Bool { envelopes.isEmpty && answers.isEmpty }
    }

    init(
        node: ClusterNode, host: EntityHost, sender: UInt64, maximumFrameSize: Int,
        onFailure: @escaping @Sendable (EntityBatch, (any Error)?) -> Void
    ) {
        self.node = node
        self.host = host
        self.sender = sender
        maximumBytes = max(1024, maximumFrameSize / 2)
        self.onFailure = onFailure
    }

    /// Sends `envelope` whatever view routed it: a signal, an answer's way back, or an item
    /// sent on that its sender routed.
    func send(_ envelope: EntityEnvelope) {
        enqueue {
            $0.envelopes.append(envelope)
        } refused: {
            $0.envelopes.append(envelope)
        }
    }

    /// Sends `envelope`, routed by the view numbered `view`; false, sending nothing, when this
    /// line has carried a marker of a later view since. The other node would take an item
    /// behind that marker as routed by the later owners, and send it on from there, behind
    /// what this node sends them directly afterwards: the caller routes it again by its view
    /// now instead (so a sender's messages to an identity keep their order across the change).
    func send(_ envelope: EntityEnvelope, routedBy view: UInt64) -> Bool {
        var current = true
        enqueueIf({
            guard $0.markedView <= view else {
                current = false
                return false
            }
            $0.envelopes.append(envelope)
            return true
        }) {
            $0.envelopes.append(envelope)
        }
        return current
    }

    /// Sends `marker`, the marker of the view numbered `view`: from here on the line carries
    /// only items routed by that view or a later one (see ``send(_:routedBy:)``).
    func send(marker: EntityEnvelope, of view: UInt64) {
        enqueue {
            $0.markedView = max($0.markedView, view)
            $0.envelopes.append(marker)
        } refused: {
            $0.envelopes.append(marker)
        }
    }

    func send(_ answer: EntityAnswer) {
        enqueue {
            $0.answers.append(answer)
        } refused: {
            $0.answers.append(answer)
        }
    }

    private func enqueue(_ add: (inout State) -> Void, refused addRefused: (inout EntityBatch) -> Void) {
        enqueueIf(
            { state in
                add(&state)
                return true
            }, refused: addRefused)
    }

    /// ``enqueue(_:refused:)`` where `add` returns false when it queued nothing.
    private func enqueueIf(_ add: (inout State) -> Bool, refused addRefused: (inout EntityBatch) -> Void) {
        let (start, refused) = state.withLock { state -> (Bool, Bool) in
            if state.closed { return (false, true) }
            guard add(&state) else { return (false, false) }
            state.queued += 1
            if state.sending { return (false, false) }
            state.sending = true
            return (true, false)
        }
        if refused {
            var batch = EntityBatch()
            addRefused(&batch)
            onFailure(batch, nil)
        } else if start {
            Task { await self.drain() }
        }
    }

    /// Claims the line for one direct request when nothing is queued or in flight on it, so
    /// that everything sent through it so far has been handed to the other node's directory
    /// and the request is behind every message sent before it. At most one direct request at
    /// a time: under load, requests go through the line and share its batches. Release the
    /// claim with ``endDirect()``.
    ///
    /// `view`: the number of the view that routed the request; a line that has carried a
    /// marker of a later view refuses it (as ``send(_:routedBy:)`` does).
    func beginDirect(routedBy view: UInt64) -> Bool {
        state.withLock { state in
            guard !state.sending, state.isEmpty, !state.closed, !state.directInFlight, state.markedView <= view else {
                return false
            }
            state.directInFlight = true
            return true
        }
    }

    func endDirect() { state.withLock { $0.directInFlight = false } }

    /// Nothing queued and no batch in flight: everything sent through the line so far has
    /// been handed to the other node (or failed), not counting a direct request.
    var isIdle: Bool { state.withLock { $0.isEmpty && !$0.sending } }

    /// How many items have been queued so far: pass it to ``hasHandedOver(_:)`` to learn when
    /// they all reached the other node (a line that keeps carrying traffic is never idle).
    func mark() -> UInt64 { state.withLock { $0.queued } }

    /// Whether the first `mark` items queued have been handed to the other node (their calls
    /// returned or failed), or taken back because the line closed.
    func hasHandedOver(_ mark: UInt64) -> Bool { state.withLock { $0.closed || $0.handedOver >= mark } }

    /// Stops the line: items queued and not yet sent go to `onFailure` with no error (never
    /// sent, so they can be routed again); a batch in flight finishes as it will.
    func close() {
        let left = state.withLock { state -> EntityBatch in
            state.closed = true
            return EntityBatch(envelopes: state.envelopes.takeAll(), answers: state.answers.takeAll())
        }
        if !left.isEmpty { onFailure(left, nil) }
    }

    /// Sends batches until the queue is empty. Only one drain runs at a time (`sending`).
    private func drain() async {
        while let batch = nextBatch() {
            do {
                try await host.deliver(EntityWire.encode(batch))
            } catch {
                onFailure(batch, error)
            }
            state.withLock { $0.handedOver += UInt64(batch.count) }
        }
    }

    /// The next batch (taken from the queue's front), or nil, having cleared `sending`, when
    /// there is nothing left: in one critical section, so an item queued meanwhile starts a
    /// drain of its own.
    private func nextBatch() -> EntityBatch? {
        state.withLock { state in
            if state.isEmpty || state.closed {
                state.sending = false
                return nil
            }
            var budget = (items: maximumItems, bytes: maximumBytes)
            let answers = state.answers.take(within: &budget, size: \.byteCount)
            let envelopes = state.envelopes.take(within: &budget, size: \.byteCount)
            return EntityBatch(sender: sender, envelopes: envelopes, answers: answers)
        }
    }
}

/// A FIFO that hands out its front in runs without moving what stays: an index to the front,
/// and the storage compacted once the taken part is at least half of it (amortised O(1) per
/// item; `Array.removeFirst(n)` would move every queued item on each take).
struct Queue<Element> {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }

    mutating func append(_ element: Element) { storage.append(element) }

    /// The front items that fit `budget` (at least one when any is queued), taken off.
    mutating func take(within budget: inout (items: Int, bytes: Int), size: (Element) -> Int) -> [Element] {
        var end = head
        while end < storage.count, budget.items > 0, budget.bytes > 0 || end == head {
            budget.items -= 1
            budget.bytes -= size(storage[end])
            end += 1
        }
        let taken = Array(storage[head..<end])
        head = end
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 4096)
            head = 0
        } else if head >= 4096, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return taken
    }

    mutating func takeAll() -> [Element] {
        defer {
            storage = []
            head = 0
        }
        return Array(storage[head...])
    }
}
