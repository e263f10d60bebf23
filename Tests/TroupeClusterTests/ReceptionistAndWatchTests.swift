import Distributed
import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeCluster

@Suite("Receptionist and remote death watch", .serialized)
struct ReceptionistAndWatchTests {
    @Test func listingsFollowCheckInsDeinitsAndDownedNodes() async throws {
        let nodes = try await startCluster(3)
        var onSecond: Greeter? = Greeter(actorSystem: nodes[1].cluster)
        let onThird = Greeter(actorSystem: nodes[2].cluster)
        try nodes[1].cluster.receptionist.checkIn(onSecond!, with: .greeters)
        try nodes[2].cluster.receptionist.checkIn(onThird, with: .greeters)
        let secondID = onSecond!.id
        await waitUntil("both greeters listed on the first node") {
            nodes[0].cluster.receptionist.lookup(.greeters).count == 2
        }
        let listed = nodes[0].cluster.receptionist.lookup(.greeters)
        #expect(Set(listed.map(\.id)) == [secondID, onThird.id])
        #expect(try await listed[0].greet("via receptionist") == "Hello, via receptionist!")

        var listing = nodes[0].cluster.receptionist.listing(of: .greeters).makeAsyncIterator()
        #expect(await listing.next()?.count == 2)
        onSecond = nil
        while let current = await listing.next(), current.count != 1 {}
        #expect(nodes[0].cluster.receptionist.lookup(.greeters).map(\.id) == [onThird.id])

        await nodes[2].shutdown()
        while let current = await listing.next(), !current.isEmpty {}
        #expect(nodes[0].cluster.receptionist.lookup(.greeters).isEmpty)
        await shutdownAll([nodes[0], nodes[1]])
    }

    /// A listing nobody reads drops its oldest listings once 16 wait: the actors in them are
    /// released then, and an actor whose last reference that was deinitialises and checks out,
    /// inside the receptionist's change that caused the drop (this crashed on the receptionist's
    /// lock, taken again by the same thread, before listings were handed out outside it).
    @Test func aListingThatDropsTheLastReferenceToAnActorLetsItCheckOut() async throws {
        let nodes = try await startCluster(1)
        let receptionist = nodes[0].cluster.receptionist
        var dropped: Greeter? = Greeter(actorSystem: nodes[0].cluster)
        let droppedNumber = dropped!.id.number
        try receptionist.checkIn(dropped!, with: .greeters)
        var unread: AsyncStream<[Greeter]>? = receptionist.listing(of: .greeters)
        receptionist.checkOut(dropped!, from: .greeters)
        dropped = nil  // only the listing's first two listings hold it now
        #expect(nodes[0].cluster.localActor(number: droppedNumber) != nil)
        let other = Greeter(actorSystem: nodes[0].cluster)
        for _ in 0..<10 {
            try receptionist.checkIn(other, with: .greeters)
            receptionist.checkOut(other, from: .greeters)
        }
        #expect(nodes[0].cluster.localActor(number: droppedNumber) == nil)
        try receptionist.checkIn(other, with: .greeters)
        #expect(receptionist.lookup(.greeters).map(\.id) == [other.id])
        unread = nil
        _ = unread
        await nodes[0].shutdown()
    }

    /// Both nodes dialled at once: each keeps one association and retires the other, and
    /// frames the peer sent on the retired one before it switched can arrive after those on
    /// the kept one. A raw peer plays the other node over two authenticated connections (the
    /// node keeps the first): a stale, empty snapshot and a check-in sent on the retired one
    /// after a check-in on the kept one change nothing (the stale snapshot used to replace the
    /// peer's entries: a region's host was listed, then gone for good).
    @Test func receptionistFramesOnARetiredAssociationChangeNothing() async throws {
        let node = try await startNode()
        let insider = ClusterNode(host: "127.0.0.1", port: 1, uid: 777)
        let kept = try await RawPeer.authenticated(as: insider, to: node.cluster.node, clusterName: "test")
        let retired = try await RawPeer.authenticated(as: insider, to: node.cluster.node, clusterName: "test")
        let key = ReceptionKey<Greeter>.greeters.wireKey
        let listedOnKept = ClusterActorID(node: insider, number: 5)
        await kept.send(.receptionist(.init(operation: .checkIn, entries: [.init(key: key, actorNumber: 5)])))
        await waitUntil("the check-in on the kept association is listed") {
            node.cluster.receptionist.lookup(.greeters).map(\.id) == [listedOnKept]
        }
        await retired.send(.receptionist(.init(operation: .snapshot, entries: [])))
        await retired.send(.receptionist(.init(operation: .checkIn, entries: [.init(key: key, actorNumber: 6)])))
        // A call behind them on the same connection: its reply means they were handled.
        let call = WireEnvelope.Invocation(
            callID: 1, recipientUID: node.cluster.node.uid, recipientNumber: .max, target: "none",
            genericSubstitutions: [], arguments: [])
        await retired.send(.invocation(call))
        var replied = false
        while !replied, let envelope = await retired.readEnvelope() {
            if case .reply(let reply) = envelope, reply.callID == 1 { replied = true }
        }
        #expect(replied, "the node answered the call on the retired association")
        #expect(node.cluster.receptionist.lookup(.greeters).map(\.id) == [listedOnKept])
        await node.shutdown()
    }

    @Test func checkingInAnotherNodesActorIsRefused() async throws {
        let nodes = try await startCluster(2)
        let greeter = Greeter(actorSystem: nodes[1].cluster)
        let remote = try Greeter.resolve(id: greeter.id, using: nodes[0].cluster)
        #expect(throws: ReceptionistError.self) { try nodes[0].cluster.receptionist.checkIn(remote, with: .greeters) }
        await shutdownAll(nodes)
    }

    @Test func aWatchedRemoteActorReportsItsDeinitThenItsNodesDown() async throws {
        let nodes = try await startCluster(2)
        var first: Greeter? = Greeter(actorSystem: nodes[1].cluster)
        let second = Greeter(actorSystem: nodes[1].cluster)
        let firstID = first!.id
        let notices = TestLock<[ClusterTermination]>([])
        let remoteFirst = try Greeter.resolve(id: firstID, using: nodes[0].cluster)
        let remoteSecond = try Greeter.resolve(id: second.id, using: nodes[0].cluster)
        nodes[0].cluster.watch(remoteFirst) { notice in notices.withLock { $0.append(notice) } }
        nodes[0].cluster.watch(remoteSecond) { notice in notices.withLock { $0.append(notice) } }
        // The watch must reach the other node before the actor goes, or it sees it gone
        // (also reported as stopped): a call in between orders them.
        _ = try await remoteFirst.greet("x")
        first = nil
        await waitUntil("the first greeter's termination") { notices.withLock { $0.count } == 1 }
        #expect(notices.withLock { $0.first?.actor } == firstID)
        #expect(notices.withLock { $0.first?.reason } == .stopped)

        await nodes[1].shutdown()
        await waitUntil(timeout: .seconds(60), "the second greeter's node-down notice") {
            notices.withLock { $0.count } == 2
        }
        #expect(notices.withLock { $0.last?.actor } == second.id)
        #expect(notices.withLock { $0.last?.reason } == .nodeDown)
        await nodes[0].shutdown()
    }

    @Test func watchingAnActorAlreadyGoneReportsAtOnce() async throws {
        let nodes = try await startCluster(2)
        var greeter: Greeter? = Greeter(actorSystem: nodes[1].cluster)
        let id = greeter!.id
        greeter = nil
        await waitUntil("deinitialised") { nodes[1].cluster.localActor(number: id.number) == nil }
        let remote = try Greeter.resolve(id: id, using: nodes[0].cluster)
        let notices = TestLock<[ClusterTermination]>([])
        nodes[0].cluster.watch(remote) { notice in notices.withLock { $0.append(notice) } }
        await waitUntil("reported") { notices.withLock { $0.count } == 1 }
        #expect(notices.withLock { $0.first?.reason } == .stopped)
        await shutdownAll(nodes)
    }
}
