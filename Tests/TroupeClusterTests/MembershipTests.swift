import NIOCore
import Testing
import Troupe
import TroupeClusterMembership
import TroupeTestSupport

@testable import TroupeCluster

@Suite("Membership: joining through seeds, leaving, failures", .serialized)
struct MembershipTests {
    @Test func threeNodesJoinThroughOneSeedAndSeeEachOther() async throws {
        let nodes = try await startCluster(3)
        for node in nodes {
            let alive = Set(node.cluster.aliveMembers)
            #expect(alive == Set(nodes.map(\.cluster.node)))
        }
        // Each pair of nodes ends up with one current association (the two that learnt of
        // each other through gossip connect at their first probe).
        await waitUntil(timeout: .seconds(60), "every pair associated") {
            nodes.allSatisfy { node in node.cluster.associations.withLock { $0.current.count } == 2 }
        }
        await shutdownAll(nodes)
    }

    @Test func eventsStartWithTheCurrentMembersAndFollowChanges() async throws {
        let nodes = try await startCluster(2)
        var events = nodes[0].cluster.membershipEvents().makeAsyncIterator()
        var seen: [ClusterNode: ClusterMemberStatus] = [:]
        for _ in 0..<2 {
            let event = try #require(await events.next())
            seen[event.member] = event.status
        }
        #expect(Set(seen.keys) == Set(nodes.map(\.cluster.node)))
        let third = try await startNode(seeds: [nodes[0].cluster.node])
        while let event = await events.next() {
            if event.member == third.cluster.node, case .alive = event.status { break }
        }
        await third.shutdown()
        while let event = await events.next() {
            if event.member == third.cluster.node, event.status == .down { break }
        }
        #expect(nodes[0].cluster.membership[third.cluster.node] == .down)
        await shutdownAll(nodes)
    }

    @Test func aGracefulLeaveIsLoggedAsADepartureNotAFailure() async throws {
        let logs = Recorder<LogRecord>()
        let observer = try await startNode(logger: recordingLogger(into: logs, level: .info))
        let leaver = try await startNode(seeds: [observer.cluster.node])
        await waitUntil(timeout: .seconds(60), "joined") { observer.cluster.aliveMembers.count == 2 }
        await leaver.shutdown()
        await waitUntil(timeout: .seconds(60), "down") { observer.cluster.membership[leaver.cluster.node] == .down }
        let about = logs.values.filter { $0.metadata["member"].map { "\($0)" } == "\(leaver.cluster.node)" }
        #expect(about.contains { $0.message == "member left" && $0.level == .info })
        #expect(!about.contains { $0.level >= .warning }, "a departure is not a failure: \(about.map(\.message))")
        await observer.shutdown()
    }

    @Test func aNodeThatStopsAnsweringBecomesUnreachableThenDown() async throws {
        let faults = FaultInjectingTransport(NIOTransport())
        let first = try await startNode(membership: fastMembership())
        let second = try await startNode(seeds: [first.cluster.node], membership: fastMembership())
        let nodes = [first, second]
        let silent = try await startNode(
            seeds: [nodes[0].cluster.node], transport: faults, membership: fastMembership())
        await waitUntil(timeout: .seconds(60), "the third node joined") {
            nodes.allSatisfy { $0.cluster.aliveMembers.count == 3 }
        }
        // Everything the third node sends or receives from now on is lost, without closing a
        // connection: only SWIM can tell.
        faults.dropEverything(true)
        for node in nodes {
            await waitUntil(timeout: .seconds(60), "\(node.cluster.node) sees the silent node down") {
                node.cluster.membership[silent.cluster.node] == .down
            }
        }
        #expect(nodes.allSatisfy { $0.cluster.aliveMembers.count == 2 })
        faults.dropEverything(false)
        await silent.shutdown()
        await shutdownAll(nodes)
    }

    @Test func aRestartedNodeJoinsAsANewMember() async throws {
        let first = try await startNode()
        let second = try await startNode(seeds: [first.cluster.node])
        let port = second.cluster.node.port
        await waitUntil(timeout: .seconds(60), "joined") { first.cluster.aliveMembers.count == 2 }
        let before = second.cluster.node
        await second.shutdown()
        await waitUntil(timeout: .seconds(60), "the old run is down") { first.cluster.membership[before] == .down }
        let again = try await startNode(seeds: [first.cluster.node], port: port)
        #expect(again.cluster.node.port == port && again.cluster.node.uid != before.uid)
        await waitUntil(timeout: .seconds(60), "the new run is alive") {
            if case .alive = first.cluster.membership[again.cluster.node] { return true }
            return false
        }
        #expect(first.cluster.membership[before] == .down)
        await again.shutdown()
        await first.shutdown()
    }
}

@Suite("Handshake: authentication and hostile peers", .serialized)
struct HandshakeTests {
    @Test func aNodeWithTheWrongSecretIsRefusedAndCounted() async throws {
        let node = try await startNode()
        let intruder = try await startNode(seeds: [node.cluster.node], secret: "not the secret at all!")
        await waitUntil(timeout: .seconds(60), "both refused the other") {
            node.cluster.refusedPeerCount.handshakes > 0 && intruder.cluster.refusedPeerCount.handshakes > 0
        }
        #expect(node.cluster.aliveMembers == [node.cluster.node])
        #expect(intruder.cluster.aliveMembers == [intruder.cluster.node])
        await shutdownAll([node, intruder])
    }

    @Test func anotherClusterNameIsRefused() async throws {
        let node = try await startNode()
        let stranger = try await startNode(seeds: [node.cluster.node], clusterName: "other")
        await waitUntil(timeout: .seconds(60), "refused") { node.cluster.refusedPeerCount.handshakes > 0 }
        #expect(node.cluster.aliveMembers.count == 1)
        await shutdownAll([node, stranger])
    }

    @Test func garbageOversizedFramesAndSilenceCloseTheConnectionAndNothingElse() async throws {
        let nodes = try await startCluster(2)
        let transport = NIOTransport()
        let target = nodes[0].cluster.node
        let recorder = ClosedRecorder()
        // Garbage where a hello should be.
        let garbage = try await transport.connect(host: target.host, port: target.port, maximumFrameSize: 1 << 20)
        garbage.start(recorder)
        var junk = ByteBuffer()
        junk.writeInteger(UInt32(6), endianness: .big)
        junk.writeBytes([9, 9, 9, 9, 9, 9])
        garbage.send(junk)
        // A frame claiming 1 GiB.
        let huge = try await transport.connect(host: target.host, port: target.port, maximumFrameSize: 1 << 20)
        huge.start(recorder)
        var claim = ByteBuffer()
        claim.writeInteger(UInt32(1 << 30), endianness: .big)
        huge.send(claim)
        // A well-formed envelope of the wrong kind before the handshake.
        let rude = try await transport.connect(host: target.host, port: target.port, maximumFrameSize: 1 << 20)
        rude.start(recorder)
        rude.send(WireEnvelope.leaving.frame())
        await waitUntil(timeout: .seconds(60), "all three closed by the node") { recorder.closed.withLock { $0 } == 3 }
        let refused = nodes[0].cluster.refusedPeerCount
        #expect(refused.protocolViolations + refused.handshakes == 3)
        // The node still serves its real peer.
        let greeter = Greeter(actorSystem: nodes[0].cluster)
        let remote = try Greeter.resolve(id: greeter.id, using: nodes[1].cluster)
        #expect(try await remote.greet("still here") == "Hello, still here!")
        await transport.shutdown()
        await shutdownAll(nodes)
    }

    @Test func badSettingsAreRefusedAtStart() async throws {
        let actors = makeTestSystem()
        await #expect(throws: ClusterStartError.self) {
            _ = try await ClusterSystem(settings: ClusterSettings(secret: "short"), actorSystem: actors)
        }
        await #expect(throws: ClusterStartError.self) {
            _ = try await ClusterSystem(
                settings: ClusterSettings(port: 70_000, secret: testSecret), actorSystem: actors)
        }
        var noPause = ClusterSettings(secret: testSecret)
        noPause.membership.probeInterval = .zero
        let refused = await #expect(throws: ClusterStartError.self) {
            _ = try await ClusterSystem(settings: noPause, actorSystem: actors)
        }
        #expect(refused?.description.contains("membership.probeInterval") == true, "\(String(describing: refused))")
        let node = try await startNode()
        await #expect(throws: ClusterStartError.self) {
            _ = try await ClusterSystem(
                settings: ClusterSettings(port: node.cluster.node.port, secret: testSecret), actorSystem: actors)
        }
        await node.shutdown()
        await actors.shutdown()
    }
}

final class ClosedRecorder: ClusterConnectionHandler {
    let closed = TestLock(0)
    func received(_ frame: ByteBuffer, on connection: any ClusterConnection) {}
    func closed(_ connection: any ClusterConnection, error: (any Error)?) { closed.withLock { $0 += 1 } }
}

/// The node's section in its actor system's snapshots (what TroupeObserver's page shows).
@Suite struct ClusterSnapshotSectionTests {
    @Test func eachNodeReportsItsMembersByStatusAndItsAssociations() async throws {
        let nodes = try await startCluster(2)
        func section(_ node: TestNode) -> SnapshotSection? {
            node.actors.snapshot(topActors: 0, by: .messagesProcessed).sections.first { $0.kind == "cluster" }
        }
        func value(_ section: SnapshotSection?, _ name: String) -> Int? {
            section?.values.first { $0.name == name }?.value
        }
        for node in nodes {
            await waitUntil("two alive members and one association in the section") {
                let current = section(node)
                return value(current, "members_alive") == 2 && value(current, "associations") == 1
            }
            #expect(section(node)?.instance.contains("\(node.cluster.node)") == true)
            #expect(value(section(node), "members_down") == 0)
        }
        await nodes[1].shutdown()
        await waitUntil("the survivor counts the leaver down") { value(section(nodes[0]), "members_down") == 1 }
        #expect(value(section(nodes[0]), "members_alive") == 1)
        #expect(section(nodes[1]) == nil, "a node that shut down drops its section")
        await shutdownAll([nodes[0]])
    }

    @Test func theMembersTableHasEachLinksRoundTripAndItsCalls() async throws {
        let nodes = try await startCluster(2)
        func row(_ node: TestNode, for peer: TestNode) -> [String: String]? {
            let section = node.actors.snapshot(topActors: 0, by: .messagesProcessed).sections.first {
                $0.kind == "cluster"
            }
            guard let table = section?.tables.first(where: { $0.name == "members" }),
                let cells = table.rows.first(where: { $0[1] == "\(peer.cluster.node.uid)" })
            else { return nil }
            return Dictionary(uniqueKeysWithValues: zip(table.columns, cells))
        }
        let greeter = Greeter(actorSystem: nodes[1].cluster)
        let remote = try Greeter.resolve(id: greeter.id, using: nodes[0].cluster)
        for index in 0..<5 { #expect(try await remote.greet("\(index)") == "Hello, \(index)!") }
        let caller = try #require(row(nodes[0], for: nodes[1]))
        #expect(caller["member"] == "\(nodes[1].cluster.node.host):\(nodes[1].cluster.node.port)")
        #expect(caller["status"] == "alive")
        #expect(caller["calls_out_total"] == "5")
        #expect(row(nodes[1], for: nodes[0])?["calls_in_total"] == "5")
        // A probe of the other node, answered directly, measures the link.
        for (node, peer) in [(nodes[0], nodes[1]), (nodes[1], nodes[0])] {
            await waitUntil(timeout: .seconds(60), "a round trip measured") {
                !(row(node, for: peer)?["round_trip_ms"] ?? "").isEmpty
            }
            let milliseconds = Double(row(node, for: peer)?["round_trip_ms"] ?? "")
            #expect(milliseconds.map { $0 >= 0 && $0 < 10_000 } == true, "\(String(describing: milliseconds))")
        }
        // A probe that only a helper answered shows apart, until a direct ack measures the
        // link again. (The cluster's own probes may measure it meanwhile: recorded until seen.)
        let peer = nodes[1].cluster.node
        let helper = ClusterNode(host: "10.0.0.9", port: 7337, uid: 9)
        await waitUntil("an indirect round trip shown") {
            nodes[0].cluster.recordIndirectRoundTrip(.microseconds(3_250), to: peer, via: helper)
            let shown = row(nodes[0], for: nodes[1])
            return shown?["indirect_round_trip_ms"] == "3.25" && shown?["indirect_via"] == "10.0.0.9:7337"
        }
        nodes[0].cluster.recordRoundTrip(.milliseconds(1), to: peer)
        #expect(row(nodes[0], for: nodes[1])?["indirect_round_trip_ms"] == "")
        #expect(row(nodes[0], for: nodes[1])?["indirect_via"] == "")
        nodes[0].cluster.recordIndirectRoundTrip(.microseconds(3_250), to: peer, via: helper)
        // A member that leaves is down: no round trip is kept for it.
        await nodes[1].shutdown()
        await waitUntil(timeout: .seconds(60), "the leaver down") { row(nodes[0], for: nodes[1])?["status"] == "down" }
        #expect(row(nodes[0], for: nodes[1])?["round_trip_ms"] == "")
        #expect(nodes[0].cluster.memberTable.withLock { $0.roundTrips[nodes[1].cluster.node] } == nil)
        #expect(row(nodes[0], for: nodes[1])?["indirect_round_trip_ms"] == "")
        #expect(nodes[0].cluster.memberTable.withLock { $0.indirectRoundTrips[nodes[1].cluster.node] } == nil)
        await shutdownAll([nodes[0]])
    }
}
