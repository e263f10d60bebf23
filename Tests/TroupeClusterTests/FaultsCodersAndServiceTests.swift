import Distributed
import NIOCore
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeCluster

/// A coder that counts what it encodes and decodes, around the JSON one.
final class CountingCoder: ClusterCoder {
    let base = JSONClusterCoder()
    let encoded = TestLock(0)
    let decoded = TestLock(0)

    func encode<Value: Encodable>(_ value: Value, into buffer: inout ByteBuffer) throws {
        encoded.withLock { $0 += 1 }
        try base.encode(value, into: &buffer)
    }

    func decode<Value: Decodable>(
        _ type: Value.Type, from buffer: ByteBuffer, userInfo: [CodingUserInfoKey: any Sendable]
    ) throws -> Value {
        decoded.withLock { $0 += 1 }
        return try base.decode(type, from: buffer, userInfo: userInfo)
    }
}

/// SWIM slow enough that a lossy link does not get a node downed during a test.
func patientMembership() -> ClusterMembershipSettings {
    var settings = ClusterMembershipSettings()
    settings.probeInterval = .seconds(1)
    settings.suspicionTimeout = .seconds(20)
    settings.downAfter = .seconds(30)
    return settings
}

@Suite("Lossy and slow links, replaceable coders, the Service conformance", .serialized)
struct FaultsCodersAndServiceTests {
    @Test func underLossEveryCallEndsWithItsReplyOrATimeoutAndRecoversAfter() async throws {
        let faults = FaultInjectingTransport(NIOTransport())
        let server = try await startNode(membership: patientMembership())
        let client = try await startNode(
            seeds: [server.cluster.node], callTimeout: .milliseconds(200), transport: faults,
            membership: patientMembership())
        await waitUntil(timeout: .seconds(60), "joined") { client.cluster.aliveMembers.count == 2 }
        let greeter = Greeter(actorSystem: server.cluster)
        let remote = try Greeter.resolve(id: greeter.id, using: client.cluster)
        _ = try await remote.greet("before")
        faults.setLoss(0.4, seed: 7)
        var replied = 0
        var timedOut = 0
        for index in 0..<40 {
            do {
                #expect(try await remote.greet("\(index)") == "Hello, \(index)!")
                replied += 1
            } catch ClusterCallError.timedOut {
                timedOut += 1
            }
        }
        #expect(replied + timedOut == 40)
        #expect(replied > 0 && timedOut > 0, "40% loss each way: some calls get through, some do not")
        faults.setLoss(0)
        for index in 0..<10 { #expect(try await remote.greet("after \(index)") == "Hello, after \(index)!") }
        await shutdownAll([client, server])
    }

    @Test func delayedFramesDelayTheCall() async throws {
        let faults = FaultInjectingTransport(NIOTransport())
        let server = try await startNode()
        let client = try await startNode(seeds: [server.cluster.node], transport: faults)
        await waitUntil(timeout: .seconds(60), "joined") { client.cluster.aliveMembers.count == 2 }
        let greeter = Greeter(actorSystem: server.cluster)
        let remote = try Greeter.resolve(id: greeter.id, using: client.cluster)
        _ = try await remote.greet("warm")
        faults.setDelay(.milliseconds(40))
        let clock = ContinuousClock()
        let started = clock.now
        #expect(try await remote.greet("slow") == "Hello, slow!")
        #expect(clock.now - started >= .milliseconds(40), "the invocation waited its delay")
        faults.setDelay(.zero)
        await shutdownAll([client, server])
    }

    @Test func delayedFramesKeepTheirConnectionsOrder() async throws {
        let faults = FaultInjectingTransport(NIOTransport())
        let received = FrameRecorder()
        let port = try await faults.listen(host: "127.0.0.1", port: 0, maximumFrameSize: 1 << 20) { connection in
            connection.start(received)
        }
        let connection = try await faults.connect(host: "127.0.0.1", port: port, maximumFrameSize: 1 << 20)
        connection.start(ClosedRecorder())
        faults.setDelay(.milliseconds(20))
        for index in 0..<50 {
            // Frames sent after the delay is lifted must not overtake the delayed ones.
            if index == 25 { faults.setDelay(.zero) }
            connection.send(WireEnvelope.watch(actorNumber: UInt64(index)).frame())
        }
        await waitUntil(timeout: .seconds(60), "all 50 frames arrived") { received.numbers.withLock { $0.count } == 50 }
        #expect(received.numbers.withLock { $0 } == (0..<50).map { UInt64($0) })
        await faults.shutdown()
    }

    @Test func aReplacementCoderCarriesEveryArgumentAndResult() async throws {
        let coder = CountingCoder()
        let server = try await startNode(coder: coder)
        let client = try await startNode(seeds: [server.cluster.node], coder: coder)
        await waitUntil(timeout: .seconds(60), "joined") { client.cluster.aliveMembers.count == 2 }
        let greeter = Greeter(actorSystem: server.cluster)
        let remote = try Greeter.resolve(id: greeter.id, using: client.cluster)
        let before = (coder.encoded.withLock { $0 }, coder.decoded.withLock { $0 })
        #expect(try await remote.greet("Ada") == "Hello, Ada!")
        // One argument out and decoded, one result back and decoded.
        #expect(coder.encoded.withLock { $0 } - before.0 == 2)
        #expect(coder.decoded.withLock { $0 } - before.1 == 2)
        await shutdownAll([client, server])
    }

    @Test func asAServiceTheNodeLeavesOnGracefulShutdown() async throws {
        let nodes = try await startCluster(2)
        let leaving = nodes[1].cluster
        try await testGracefulShutdown { trigger in
            let running = Task(executorPreference: nodes[1].actors.taskExecutor) { try await leaving.run() }
            trigger.triggerGracefulShutdown()
            try await running.value
        }
        #expect(leaving.shutDown)
        await waitUntil(timeout: .seconds(60), "the other node saw it leave") {
            nodes[0].cluster.membership[leaving.node] == .down
        }
        await shutdownAll(nodes)
    }
}

/// Records the actor numbers of the watch frames it receives.
final class FrameRecorder: ClusterConnectionHandler {
    let numbers = TestLock<[UInt64]>([])
    func received(_ frame: ByteBuffer, on connection: any ClusterConnection) {
        if case .watch(let number)? = try? WireEnvelope.decode(frame) { numbers.withLock { $0.append(number) } }
    }
    func closed(_ connection: any ClusterConnection, error: (any Error)?) {}
}
