import Dispatch
import Logging
import Synchronization
import Testing
import TroupeCluster
import TroupeTestSupport

@testable import TroupeClusterEntities

/// The handoff's signals between live regions: the order in which they leave a node.
@Suite("Handoff signals between regions", .serialized)
struct SignalOrderTests {
    /// Views are applied from several threads (the receptionist's listing, a member's leave
    /// announcement, this node's own leave). Two applied at once must still send their
    /// markers in the order they were adopted: a marker of older owners arriving last would
    /// replace the newer one at the receiver, which would wait for this node's marker of its
    /// owners until the handoff timeout (seen in 1 of 50 join-and-leave runs, 2026-11-28).
    ///
    /// The first view's thread is stopped where the region logs the change, after the view is
    /// adopted; the second view is applied meanwhile on another thread; then the first goes on.
    @Test func markersLeaveInTheOrderTheViewsWereAdopted() async throws {
        let gate = LogGate()
        let first = try await startNode(logger: Logger(label: "gated") { _ in GatedLogHandler(gate: gate) })
        var nodes = [first]
        for _ in 1..<3 { nodes.append(try await startNode(seeds: [first.cluster.node])) }
        do {
            await waitUntil(timeout: .seconds(60), "3 nodes see each other alive") {
                nodes.allSatisfy { $0.cluster.aliveMembers.count == 3 }
            }
            let regions = try await ledgersOnEveryNode(nodes, log: LedgerLog())
            let (sender, receiver) = (regions[0], regions[1])
            let all = sender.listedHosts
            let withoutTheThird = all.filter { $0.id.node != nodes[2].cluster.node }
            #expect(all.count == 3 && withoutTheThird.count == 2)
            let senderUID = first.cluster.node.uid
            for round in 0..<3 {
                gate.arm()
                let firstApplied = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    sender.applyView(hosts: withoutTheThird)
                    firstApplied.signal()
                }
                await waitUntil(timeout: .seconds(30), "the first view's thread stopped at its log line") {
                    gate.isHolding
                }
                let older = sender.snapshot().view.fingerprint
                sender.applyView(hosts: all)
                let adopted = sender.snapshot().view.fingerprint
                #expect(older != adopted)
                gate.release()
                firstApplied.wait()
                // Both markers are on the line to the receiver, and have arrived once the line is
                // idle (a batch's call returns once the receiver has taken its items).
                let line = try #require(sender.snapshot().view.member(nodes[1].cluster.node)?.outbox)
                await waitUntil(timeout: .seconds(10), "the line to the receiver is idle") { line.isIdle }
                let last = receiver.lastMarker(from: senderUID).map { String($0, radix: 16) } ?? "none"
                #expect(
                    receiver.lastMarker(from: senderUID) == adopted,
                    "round \(round): the last marker names owners \(last), not \(String(adopted, radix: 16)), the sender's latest (older: \(String(older, radix: 16)))"
                )
            }
        } catch {
            for node in nodes { await node.shutdown() }
            throw error
        }
        for node in nodes { await node.shutdown() }
    }

    /// A send reads the view, then queues on a line; the view can change in between. A line
    /// that has carried a newer view's marker refuses the item (its receiver would take it as
    /// routed by the newer owners, and send it on, behind what the sender sends next), and the
    /// sender routes it again.
    @Test func aLineRefusesAnItemRoutedByAViewOlderThanItsLastMarker() async throws {
        try await withCluster(2) { nodes in
            let regions = try await ledgersOnEveryNode(nodes, log: LedgerLog())
            let sender = regions[0]
            // The same hosts again: a new view (numbered), the same owners, so no marker yet.
            let before = sender.snapshot().view
            sender.applyView(hosts: sender.listedHosts)
            let after = sender.snapshot().view
            #expect(after.number == before.number + 1 && after.fingerprint == before.fingerprint)
            let line = try #require(after.member(nodes[1].cluster.node)?.outbox)
            let payload = try sender.encode(Ledger.Message.append(sender: 9, sequence: 1))
            // A key the other node owns: delivered there, and the ask below reaches it after.
            let key = try #require(
                (0..<100).map { "k\($0)" }.first { after.owner(of: $0)?.node == nodes[1].cluster.node })
            let item = EntityEnvelope(key: key, payload: payload)
            #expect(line.send(item, routedBy: before.number), "no marker of a later view yet")
            // The marker of the new view, as the region sends it when the owners change.
            let marker = EntityEnvelope.signal(
                HandoffSignal(
                    kind: .marker, fingerprint: after.fingerprint, member: nodes[0].cluster.node.uid,
                    incarnation: sender.host.id.number))
            line.send(marker: marker, of: after.number)
            #expect(!line.send(item, routedBy: before.number), "routed by the view before the marker")
            #expect(line.send(item, routedBy: after.number))
            await waitUntil("the line is idle") { line.isIdle }
            #expect(!line.beginDirect(routedBy: before.number), "a direct ask routed by the older view")
            #expect(line.beginDirect(routedBy: after.number))
            line.endDirect()
            // The two items that went out reached the ledger.
            let entries = try await sender.entity(key).ask(Entries())
            #expect(entries == [Ledger.Entry(sender: 9, sequence: 1), Ledger.Entry(sender: 9, sequence: 1)])
        }
    }
}

/// Holds the first thread that logs a change of a region's members once armed, until released.
final class LogGate: Sendable {
    private struct State {
        var armed = false
        var holding = false
    }
    private let state = Mutex(State())
    private let released = DispatchSemaphore(value: 0)

    func arm() { state.withLock { $0.armed = true } }

    var isHolding: Bool { state.withLock { $0.holding } }

    func release() {
        state.withLock { $0.holding = false }
        released.signal()
    }

    /// Called for every message the node logs.
    func logged(_ message: String) {
        guard message.hasPrefix("members: owners") else { return }
        let hold = state.withLock { state in
            guard state.armed else { return false }
            state.armed = false
            state.holding = true
            return true
        }
        if hold { released.wait() }
    }
}

private struct GatedLogHandler: LogHandler {
    let gate: LogGate
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .debug

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) { gate.logged("\(event.message)") }
}
