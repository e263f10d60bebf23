import Testing
import Troupe
import TroupeClusterMembership
import TroupeTestSupport

@testable import TroupeCluster

/// A member that answers only through other members has its connection closed and dialled
/// again (`ClusterConnectionLimits.reconnectAfterIndirectAnswers`): a TCP connection waiting to
/// retransmit a segment holds every later frame, while SWIM keeps the member alive through
/// its helpers.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct DirectPathTests {
    static let a = ClusterNode(host: "127.0.0.1", port: 7001, uid: 1)
    static let b = ClusterNode(host: "127.0.0.1", port: 7002, uid: 2)

    static func indirect(_ member: ClusterNode) -> SWIMDirective {
        .measuredIndirectly(roundTrip: .milliseconds(5), to: member, via: b)
    }

    @Test func answersThroughHelpersInARowReconnectOnceAtTheLimit() {
        var watch = DirectPathWatch(limit: 3)
        #expect(watch.observe([Self.indirect(Self.a), Self.indirect(Self.a)]).isEmpty)
        #expect(watch.counted == [Self.a: 2])
        #expect(watch.observe([Self.indirect(Self.a)]) == [Self.a])
        // The count starts again after a reconnect.
        #expect(watch.counted.isEmpty)
        #expect(watch.observe([Self.indirect(Self.a), Self.indirect(Self.a)]).isEmpty)
        #expect(watch.observe([Self.indirect(Self.a)]) == [Self.a])
    }

    @Test func aDirectAckAFrameHeardOrADownStartsTheCountAgain() {
        var watch = DirectPathWatch(limit: 2)
        _ = watch.observe([Self.indirect(Self.a)])
        #expect(watch.observe([.measured(roundTrip: .milliseconds(1), to: Self.a), Self.indirect(Self.a)]).isEmpty)
        watch.heardDirectly(Self.a)
        #expect(watch.observe([Self.indirect(Self.a)]).isEmpty)
        _ = watch.observe([.event(ClusterMembershipEvent(member: Self.a, status: .down))])
        #expect(watch.observe([Self.indirect(Self.a)]).isEmpty)
        // Members are counted apart.
        #expect(watch.observe([Self.indirect(Self.b), Self.indirect(Self.a)]) == [Self.a])
        #expect(watch.counted == [Self.b: 1])
    }

    @Test func zeroNeverReconnects() {
        var watch = DirectPathWatch(limit: 0)
        #expect(watch.observe(Array(repeating: Self.indirect(Self.a), count: 10)).isEmpty)
    }

    @Test func aNegativeLimitIsRefusedAtStart() async throws {
        var settings = ClusterSettings(secret: testSecret)
        settings.limits.reconnectAfterIndirectAnswers = -1
        let actors = makeTestSystem(name: "node", workers: 1)
        await #expect {
            _ = try await ClusterSystem(settings: settings, actorSystem: actors)
        } throws: { error in
            "\(error)".contains("limits.reconnectAfterIndirectAnswers is a count")
        }
        await actors.shutdown()
    }

    /// Probes every 200 ms, and suspicion slow enough that a loaded machine downs nobody: only
    /// the connection is at fault here.
    static func membership() -> ClusterMembershipSettings {
        var settings = fastMembership()
        settings.suspicionTimeout = .seconds(20)
        settings.downAfter = .seconds(30)
        return settings
    }

    /// Three nodes, a greeter on the first, and the second's reference to it, answered once;
    /// then every connection the second dialled to the first delivers nothing more.
    /// (The caller keeps `greeter`: a distributed actor nobody holds is gone.)
    static func stalledGreeter(
        reconnectAfter limit: Int
    ) async throws -> (nodes: [TestNode], greeter: Greeter, remote: Greeter) {
        let (nodes, held) = try await cluster(reconnectAfter: limit)
        let greeter = Greeter(actorSystem: nodes[0].cluster)
        let remote = try Greeter.resolve(id: greeter.id, using: nodes[1].cluster)
        #expect(try await remote.greet("before") == "Hello, before!")
        #expect(held.stallConnections(toPort: nodes[0].cluster.node.port) == 1)
        return (nodes, greeter, remote)
    }

    /// Three nodes; the second and third dial the first through fault-injecting transports.
    static func cluster(reconnectAfter limit: Int) async throws -> (nodes: [TestNode], held: FaultInjectingTransport) {
        var nodes: [TestNode] = []
        var transports: [FaultInjectingTransport] = []
        for index in 0..<3 {
            let transport = FaultInjectingTransport(NIOTransport())
            var settings = ClusterSettings(
                clusterName: "direct-path",
                seeds: nodes.first.map { [($0.cluster.node.host, $0.cluster.node.port)] } ?? [],
                secret: testSecret, callTimeout: .seconds(1), membership: membership(), transport: transport,
                logger: quietLogger)
            settings.limits.reconnectAfterIndirectAnswers = limit
            let actors = makeTestSystem(name: "node\(index)", workers: 1)
            nodes.append(
                TestNode(cluster: try await ClusterSystem(settings: settings, actorSystem: actors), actors: actors))
            transports.append(transport)
        }
        await waitUntil(timeout: .seconds(60), "3 nodes see each other alive") {
            nodes.allSatisfy { $0.cluster.aliveMembers.count == 3 }
        }
        return (nodes, transports[1])
    }

    static func isUnreachableOrDown(_ status: ClusterMemberStatus) -> Bool {
        switch status {
        case .unreachable, .down: true
        case .alive, .suspect: false
        }
    }

    @Test func aConnectionThatDeliversNothingIsDialledAgainAndCallsGetThrough() async throws {
        let (nodes, greeter, remote) = try await Self.stalledGreeter(reconnectAfter: 3)
        // What the second node sends the first is held from now on: only a new connection
        // gets a call through.
        var answered = false
        var failures = 0
        let stalledAt = ContinuousClock.now
        let deadline = stalledAt + StressScale.hangGuard(.seconds(30))
        while !answered && ContinuousClock.now < deadline {
            do {
                answered = try await remote.greet("after") == "Hello, after!"
            } catch {
                failures += 1
            }
        }
        #expect(answered, "no call got through in 30 s (\(failures) failed)")
        print(
            "a stalled connection: a call got through \(ContinuousClock.now - stalledAt) after the stall (\(failures) failed)"
        )
        #expect(nodes[0].cluster.reconnectCount + nodes[1].cluster.reconnectCount >= 1)
        // SWIM kept every member alive throughout (through the third node).
        for node in nodes {
            #expect(!node.cluster.membership.values.contains(where: Self.isUnreachableOrDown))
        }
        _ = greeter
        await shutdownAll(nodes)
    }

    /// The same stall with the guard off: the member stays alive through its helper, and every
    /// call to it times out.
    @Test func withoutTheGuardAStalledConnectionHoldsEveryCall() async throws {
        let (nodes, greeter, remote) = try await Self.stalledGreeter(reconnectAfter: 0)
        for _ in 0..<3 {
            await #expect {
                _ = try await remote.greet("after")
            } throws: { error in
                guard case ClusterCallError.timedOut = error else { return false }
                return true
            }
        }
        #expect(nodes.map(\.cluster.reconnectCount) == [0, 0, 0])
        #expect(nodes[1].cluster.aliveMembers.contains(nodes[0].cluster.node))
        _ = greeter
        await shutdownAll(nodes)
    }
}
