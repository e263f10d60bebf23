import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeCluster

/// A transport's shutdown ends what it started: a dial still waiting for its peer's answer
/// fails at shutdown instead of running on, suspended for good on event loops that are gone
/// (LeakSanitizer caught such a dial at the end of a CI run, 2026-11-29).
@Suite struct TransportShutdownTests {
    /// Far longer than any test waits: a dial that ends sooner was ended by the shutdown.
    static let patientConnect: Duration = .seconds(120)

    @Test func shutdownEndsADialThatIsStillWaitingForItsPeer() async throws {
        let port = try UnansweredPort()
        let transport = NIOTransport(connectTimeout: Self.patientConnect)
        let dial = Task { try await transport.connect(host: "127.0.0.1", port: port.port, maximumFrameSize: 1024) }
        #expect(await waitUntil("the dial starts") { transport.dialsInFlight == 1 })
        let started = ContinuousClock.now
        await transport.shutdown()
        // A dial still counted would never finish: fail here rather than hang on it.
        try #require(transport.dialsInFlight == 0, "the dial outlived the shutdown")
        let result = await dial.result
        #expect(ContinuousClock.now - started < Self.patientConnect / 2, "ended by the shutdown, not its timeout")
        guard case .failure(let error) = result, case ClusterTransportError.unreachable = error else {
            Issue.record("the dial should fail as unreachable, got \(result)")
            return
        }
    }

    @Test func aDialAskedForAfterShutdownFailsAtOnce() async throws {
        let transport = NIOTransport()
        await transport.shutdown()
        await #expect {
            _ = try await transport.connect(host: "127.0.0.1", port: 9, maximumFrameSize: 1024)
        } throws: { error in
            guard case ClusterTransportError.unreachable(_, _, let reason) = error else { return false }
            return reason.contains("shut down")
        }
        #expect(transport.dialsInFlight == 0)
    }

    @Test func aNodeShutDownWhileDiallingASeedLeavesNoDialRunning() async throws {
        let seed = try UnansweredPort()
        let transport = NIOTransport(connectTimeout: Self.patientConnect)
        let actors = makeTestSystem(name: "node", workers: 1)
        let settings = ClusterSettings(
            clusterName: "test", port: 0, seeds: [("127.0.0.1", seed.port)], secret: testSecret,
            transport: transport, logger: quietLogger)
        let cluster = try await ClusterSystem(settings: settings, actorSystem: actors)
        #expect(await waitUntil("the node dials its seed") { transport.dialsInFlight == 1 })
        let started = ContinuousClock.now
        await cluster.shutdown()
        #expect(ContinuousClock.now - started < Self.patientConnect / 2, "the dial was ended, not waited out")
        #expect(transport.dialsInFlight == 0)
        #expect(cluster.connectionCounts.open == 0)
        await actors.shutdown()
    }

    /// The warning about plain TCP off this machine is skipped only for loopback addresses.
    @Test func onlyLoopbackAddressesCountAsLoopback() {
        for host in ["127.0.0.1", "127.9.8.7", "::1", "::ffff:127.0.0.1", "localhost"] {
            #expect(ClusterSystem.isLoopback(host), "\(host)")
        }
        for host in ["127.example.com", "10.0.0.1", "0.0.0.0", "::", "::2", "::ffff:10.0.0.1", "node-1", ""] {
            #expect(!ClusterSystem.isLoopback(host), "\(host)")
        }
    }
}
