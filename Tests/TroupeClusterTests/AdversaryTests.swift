import Foundation
import NIOCore
import Testing
import Troupe
import TroupeClusterMembership
import TroupeTestSupport

@testable import TroupeCluster
@testable import troupe_cluster_node

#if canImport(Glibc)
    import Glibc
#endif

/// A client that speaks the wire format byte by byte over a plain TCP socket (``RawSocket``).
final class RawPeer: Sendable {
    let socket: RawSocket
    var fd: Int32 { socket.fd }

    init(fd: Int32) { socket = RawSocket(fd: fd) }

    /// Connects to 127.0.0.1:`port`, from `source` (another loopback address) if given.
    init(port: Int, source: String? = nil) throws {
        socket = try RawSocket(port: port, source: source)
    }

    /// A connection to `node` that has completed the handshake as `member` (the initiator),
    /// with the test secret.
    static func authenticated(as member: ClusterNode, to node: ClusterNode, clusterName: String) async throws -> RawPeer
    {
        let peer = try RawPeer(port: node.port)
        let nonce = Handshake.nonce()
        await peer.send(.hello(WireEnvelope.Hello(clusterName: clusterName, from: member, nonce: nonce)))
        guard case .challenge(let challenge)? = await peer.readEnvelope() else { throw POSIXError(.EPROTO) }
        let proof = Handshake(secret: testSecret, clusterName: clusterName).initiatorProof(
            initiator: member, responder: challenge.from, initiatorNonce: nonce, responderNonce: challenge.nonce)
        await peer.send(.proof(.init(proof: proof)))
        return peer
    }

    /// Sends all of `bytes` (false if the peer closed or reset the connection).
    @discardableResult
    func send(_ bytes: [UInt8]) async -> Bool { await socket.send(bytes) }

    @discardableResult
    func send(_ envelope: WireEnvelope) async -> Bool {
        await send(Array(envelope.frame().readableBytesView))
    }

    /// Reads one frame's payload, or nil if the connection closed or nothing came in time.
    func readFrame(within timeout: Duration = .seconds(5)) async -> [UInt8]? {
        guard let header = await read(4, within: timeout) else { return nil }
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        return await read(length, within: timeout)
    }

    func readEnvelope(within timeout: Duration = .seconds(5)) async -> WireEnvelope? {
        guard let payload = await readFrame(within: timeout) else { return nil }
        return try? WireEnvelope.decode(ByteBuffer(bytes: payload))
    }

    private func read(_ count: Int, within timeout: Duration) async -> [UInt8]? {
        await socket.read(count, within: timeout)
    }

    /// Whether the node closed the connection within `timeout` (reads and drops what it sends).
    func closedByPeer(within timeout: Duration) async -> Bool { await socket.closedByPeer(within: timeout) }
}

struct ProcessUsage {
    let residentBytes: Int
    let peakResidentBytes: Int
    let descriptors: Int

    init(pid: Int32) {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func kilobytes(_ key: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
            return (Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "0") ?? 0)
                * 1024
        }
        residentBytes = kilobytes("VmRSS:")
        peakResidentBytes = kilobytes("VmHWM:")
        descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }
}

/// A legitimate peer calling the node's echo in a loop while it is attacked: every call must
/// succeed; latencies are kept for the p99.
final class LegitimateCaller: Sendable {
    let latencies = TestLock<[Duration]>([])
    let failures = TestLock<[String]>([])
    private let task: TestLock<Task<Void, Never>?> = TestLock(nil)

    init(echo: ClusterEcho) {
        let latencies = latencies
        let failures = failures
        task.withLock {
            $0 = Task {
                while !Task.isCancelled {
                    let started = ContinuousClock.now
                    do {
                        let bytes = try await echo.echo([1, 2, 3])
                        if bytes != [1, 2, 3] { failures.withLock { $0.append("wrong answer \(bytes)") } }
                        latencies.withLock { $0.append(ContinuousClock.now - started) }
                    } catch {
                        // `stop()` cancels the loop: a call it interrupts is not a failure.
                        if Task.isCancelled { return }
                        failures.withLock { $0.append("\(error)") }
                    }
                    try? await Task.sleep(for: .milliseconds(5))
                }
            }
        }
    }

    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }

    var p99: Duration {
        let sorted = latencies.withLock { $0 }.sorted()
        return sorted.isEmpty ? .zero : sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
    }
}

/// Attacks from a client that speaks the wire format byte by byte, against a real node process
/// (`troupe-cluster-node`) on 127.0.0.1, while a legitimate peer keeps calling it. For each: the
/// node stays up, the legitimate calls all succeed, and the node's descriptors and memory come
/// back to their baseline.
@Suite("Adversaries on the wire against a node process", .serialized)
struct AdversaryTests {
    /// The node under attack, a legitimate in-process peer calling it, and the baseline usage.
    struct Scene {
        let target: NodeProcess
        let node: ClusterNode
        let peer: TestNode
        let caller: LegitimateCaller
        let baseline: ProcessUsage

        static func start() async throws -> Scene {
            let target = try NodeProcess(
                seed: nil, extraArguments: ["--handshake-ms", "1000", "--incomplete-frame-ms", "1000"])
            let node = try #require(await target.node())
            let peer = try await startNode(seeds: [node], clusterName: "troupe")
            await waitUntil(timeout: .seconds(60), "the echo listed") {
                peer.cluster.receptionist.lookup(echoKey).count == 1
            }
            let echo = try #require(peer.cluster.receptionist.lookup(echoKey).first)
            #expect(try await echo.echo([1]) == [1])
            try await Task.sleep(for: .milliseconds(300))
            let baseline = ProcessUsage(pid: target.process.processIdentifier)
            return Scene(
                target: target, node: node, peer: peer, caller: LegitimateCaller(echo: echo), baseline: baseline)
        }

        /// The node is up, never removed, every legitimate call succeeded, and its descriptors
        /// are back to the baseline (memory within `memorySlack` of it).
        func finish(_ attack: String, memorySlack: Int = 32 << 20) async {
            await caller.stop()
            #expect(target.process.isRunning, "\(attack): the node stays up")
            #expect(!target.lines.withLock { $0.contains("REMOVED") }, "\(attack): the node was not removed")
            #expect(
                caller.failures.withLock { $0 }.isEmpty,
                "\(attack): legitimate calls failed: \(caller.failures.withLock { $0.prefix(3) })")
            #expect(caller.latencies.withLock { $0.count } > 0, "\(attack): the legitimate peer called throughout")
            let pid = target.process.processIdentifier
            await waitUntil(timeout: .seconds(20), "\(attack): descriptors back to the baseline") {
                ProcessUsage(pid: pid).descriptors <= baseline.descriptors
            }
            let after = ProcessUsage(pid: pid)
            #expect(after.residentBytes <= baseline.residentBytes + memorySlack, "\(attack): resident memory returned")
            print(
                "adversary: \(attack): \(caller.latencies.withLock { $0.count }) legitimate calls, p99 \(caller.p99), "
                    + "peak RSS +\((after.peakResidentBytes - baseline.peakResidentBytes) >> 20) MiB, "
                    + "RSS +\((after.residentBytes - baseline.residentBytes) >> 20) MiB, "
                    + "descriptors \(baseline.descriptors) -> \(after.descriptors)")
            await peer.shutdown()
            target.stop()
        }
    }

    static func hello(name: String = "troupe", from member: ClusterNode, nonce: [UInt8]) -> WireEnvelope {
        .hello(WireEnvelope.Hello(clusterName: name, from: member, nonce: nonce))
    }

    static func stranger(_ uid: UInt64 = 4242) -> ClusterNode { ClusterNode(host: "127.0.0.1", port: 1, uid: uid) }

    @Test func garbageLengthsAroundTheLimitsTruncatedFramesAndWrongSecrets() async throws {
        let scene = try await Scene.start()
        let port = scene.node.port
        // Garbage where a hello should be.
        let garbage = try RawPeer(port: port)
        await garbage.send([0, 0, 0, 6, 9, 9, 9, 9, 9, 9])
        #expect(await garbage.closedByPeer(within: .seconds(5)), "garbage")
        // Length prefixes at and around the unauthenticated limit (4 KiB): just over is refused
        // before a byte of it is read; at the limit, it is read (and, being garbage, refused).
        for length in [4095, 4096, 4097, 8 << 20, Int(UInt32.max)] {
            let peer = try RawPeer(port: port)
            await peer.send([
                UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
            ])
            if length <= 4096 { await peer.send([UInt8](repeating: 7, count: length)) }
            #expect(await peer.closedByPeer(within: .seconds(5)), "length \(length)")
        }
        // Lengths under any envelope.
        for length in [0, 1] {
            let peer = try RawPeer(port: port)
            await peer.send([0, 0, 0, UInt8(length)] + [UInt8](repeating: 1, count: length))
            #expect(await peer.closedByPeer(within: .seconds(5)), "length \(length)")
        }
        // A truncated frame held open, and silence: closed by the handshake timeout (1 s here).
        let truncated = try RawPeer(port: port)
        await truncated.send([0, 0, 0, 100, 1, 2, 3])
        let silent = try RawPeer(port: port)
        #expect(await truncated.closedByPeer(within: .seconds(5)), "truncated frame")
        #expect(await silent.closedByPeer(within: .seconds(5)), "silence")
        // A hello, then a made-up proof: refused.
        let guesser = try RawPeer(port: port)
        await guesser.send(Self.hello(from: Self.stranger(), nonce: Handshake.nonce()))
        guard case .challenge? = await guesser.readEnvelope() else {
            Issue.record("no challenge")
            return
        }
        await guesser.send(.proof(.init(proof: [UInt8](repeating: 0, count: 32))))
        guard case .refused? = await guesser.readEnvelope() else {
            Issue.record("a made-up proof was not refused")
            return
        }
        #expect(await guesser.closedByPeer(within: .seconds(5)))
        // Another cluster's name with a forged log line in it: refused, and the log shows it
        // escaped (no line of the node's log starts with the forged text).
        let injector = try RawPeer(port: port)
        await injector.send(Self.hello(name: "x\nFORGED LOG LINE", from: Self.stranger(), nonce: Handshake.nonce()))
        guard case .refused(let refusal)? = await injector.readEnvelope() else {
            Issue.record("another cluster's name was not refused")
            return
        }
        #expect(!refusal.reason.contains("FORGED"), "the refusal does not echo the peer's text")
        try await Task.sleep(for: .milliseconds(200))
        #expect(!scene.target.errorLines.withLock { $0.contains { $0.hasPrefix("FORGED") } })
        await scene.finish("garbage, limits, truncation, wrong secret, log injection")
    }

    @Test func aRefusalBeforeTheProofStopsNothingInEitherRole() async throws {
        let scene = try await Scene.start()
        // As initiator: a hello, then "you are down" with a made-up notice, ten times.
        for _ in 0..<10 {
            let liar = try RawPeer(port: scene.node.port)
            await liar.send(Self.hello(from: Self.stranger(), nonce: Handshake.nonce()))
            _ = await liar.readEnvelope()
            await liar.send(
                .refused(
                    .init(
                        reason: "you are down",
                        downNotice: .init(
                            from: Self.stranger(), responderNonce: Handshake.nonce(), proof: Handshake.nonce()))))
            #expect(await liar.closedByPeer(within: .seconds(5)))
        }
        // As responder: a node process whose seed is a port the attacker holds.
        let listener = try TestListener()
        let dialler = try NodeProcess(seed: ("127.0.0.1", listener.port))
        defer { dialler.stop() }
        let diallerNode = try #require(await dialler.node())
        for _ in 0..<3 {
            let victim = try #require(await listener.accept(within: .seconds(10)), "the node dials its seed")
            guard case .hello(let hello)? = await victim.readEnvelope() else {
                Issue.record("no hello from the dialling node")
                break
            }
            #expect(hello.from == diallerNode)
            await victim.send(
                .refused(
                    .init(
                        reason: "you are down",
                        downNotice: .init(
                            from: Self.stranger(), responderNonce: Handshake.nonce(), proof: Handshake.nonce())
                    )))
            #expect(await victim.closedByPeer(within: .seconds(5)))
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(dialler.process.isRunning, "the dialling node stays up")
        #expect(!dialler.lines.withLock { $0.contains("REMOVED") })
        listener.close()
        await scene.finish("refusals before the proof")
    }

    @Test func floodsOfUnauthenticatedConnectionsAndChurn() async throws {
        let scene = try await Scene.start()
        let port = scene.node.port
        // 200 connections at once, from 25 loopback addresses, each announcing an 8 MiB frame
        // and sending 64 KiB of it.
        var flood: [RawPeer] = []
        for index in 0..<200 {
            guard let peer = try? RawPeer(port: port, source: "127.0.0.\(2 + index % 25)") else { continue }
            flood.append(peer)
        }
        let frame = [0, 0x80, 0, 0] + [UInt8](repeating: 0xEE, count: 64 << 10)
        for peer in flood { await peer.send(frame) }
        var closed = 0
        for peer in flood where await peer.closedByPeer(within: .seconds(10)) { closed += 1 }
        #expect(closed == flood.count, "every flooding connection was closed")
        let peak = ProcessUsage(pid: scene.target.process.processIdentifier).peakResidentBytes
        #expect(peak - scene.baseline.peakResidentBytes <= 64 << 20, "peak RSS within 64 MiB of the baseline")
        flood.removeAll()
        // Held connections past the limits: 100 silent connections from one address; the
        // legitimate peer's association is untouched, and all close by the handshake timeout.
        var held: [RawPeer] = []
        for _ in 0..<100 { if let peer = try? RawPeer(port: port) { held.append(peer) } }
        for peer in held { #expect(await peer.closedByPeer(within: .seconds(10))) }
        held.removeAll()
        // Churn: 500 connections opened and closed at once.
        for _ in 0..<500 { _ = try? RawPeer(port: port) }
        await scene.finish("floods and churn", memorySlack: 32 << 20)
    }

    @Test func anAuthenticatedPeerForgingGossipPartialFramesAndAReplayedHandshake() async throws {
        let scene = try await Scene.start()
        let port = scene.node.port
        let handshake = Handshake(secret: testSecret, clusterName: "troupe")
        let insider = Self.stranger(777)
        // A member with the secret (the test knows it): a full handshake as initiator.
        let peer = try RawPeer(port: port)
        let nonce = Handshake.nonce()
        let hello = Self.hello(from: insider, nonce: nonce)
        await peer.send(hello)
        guard case .challenge(let challenge)? = await peer.readEnvelope() else {
            Issue.record("no challenge")
            return
        }
        let proof = WireEnvelope.proof(
            .init(
                proof: handshake.initiatorProof(
                    initiator: insider, responder: challenge.from, initiatorNonce: nonce,
                    responderNonce: challenge.nonce)))
        await peer.send(proof)
        // Forged gossip: the legitimate peer and the node itself are down; 1,000 made-up members.
        let legitimate = scene.peer.cluster.node
        await peer.send(
            .membership(
                .ping(
                    sequence: 1,
                    gossip: [
                        .init(member: legitimate, status: .down), .init(member: scene.node, status: .down),
                        .init(member: legitimate, status: .unreachable(incarnation: .max)),
                    ])))
        for batch in 0..<5 {
            let madeUp = (0..<200).map { index in
                SWIMMessage.Gossip(
                    member: ClusterNode(host: "127.0.0.1", port: 2 + batch * 200 + index, uid: 9),
                    status: .alive(incarnation: 0))
            }
            await peer.send(.membership(.ping(sequence: 2, gossip: madeUp)))
        }
        try await Task.sleep(for: .seconds(1))
        #expect(!scene.target.saw(legitimate, "down"), "one member's gossip removes nobody reachable")
        #expect(
            !scene.target.lines.withLock { $0.contains { $0.hasPrefix("MEMBER 127.0.0.1:2") } },
            "no made-up member admitted")
        // A frame started and never finished: closed after the incomplete-frame timeout (1 s).
        await peer.send([0, 0x10, 0, 0] + [UInt8](repeating: 1, count: 1000))
        #expect(await peer.closedByPeer(within: .seconds(10)), "an incomplete frame after the handshake")
        // The captured hello and proof replayed on a new connection: the node's nonce differs.
        let replay = try RawPeer(port: port)
        await replay.send(hello)
        _ = await replay.readEnvelope()
        await replay.send(proof)
        guard case .refused? = await replay.readEnvelope() else {
            Issue.record("a replayed proof was not refused")
            return
        }
        await scene.finish("forged gossip, made-up members, partial frames, replay")
    }
}

/// A listening socket the test accepts connections on, as a fake seed.
final class TestListener: @unchecked Sendable {  // used by one test task at a time
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func accept(within timeout: Duration) async -> RawPeer? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let client = Glibc.accept(fd, nil, nil)
            if client >= 0 {
                _ = fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK)
                return RawPeer(fd: client)
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    func close() { Glibc.close(fd) }
}
