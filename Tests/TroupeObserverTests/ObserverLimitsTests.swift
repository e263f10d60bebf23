import Testing
import Troupe
import TroupeTestSupport

@testable import TroupeObserver

/// What a client that does not play by the rules gets: every limit the observer holds a
/// connection to, tested by writing the bytes by hand. None of it needs the token, because
/// all of it happens before the token is read.
@Suite(.serialized)
struct ObserverLimitsTests {
    static let token = ObserverAccessTests.token

    @Test func aHeaderOverTheLimitIsRefusedAndTheConnectionClosed() async throws {
        try await ObserverAccessTests.withObserver { _, observer in
            let socket = try RawSocket(port: observer.port)
            let huge = String(repeating: "a", count: 9 * 1024)
            await socket.send("GET / HTTP/1.1\r\nHost: x\r\nX-Padding: \(huge)\r\n\r\n")
            let reply = await ObserverClient.readReply(socket)
            #expect(reply?.status == 400 || reply?.status == 431, "got \(String(describing: reply?.status))")
            #expect(await socket.closedByPeer(within: .seconds(5)))
            // Many small headers add up to the list limit (16 KiB) before the count limit.
            let many = (0..<60).map { "X-H\($0): \(String(repeating: "b", count: 400))\r\n" }.joined()
            let second = try RawSocket(port: observer.port)
            await second.send("GET / HTTP/1.1\r\nHost: x\r\n\(many)\r\n")
            #expect(await second.closedByPeer(within: .seconds(5)))
            #expect(observer.samplesTaken == 0)
        }
    }

    @Test func aBodyOverFourKiBIsRefusedWithoutBeingKept() async throws {
        try await ObserverAccessTests.withObserver { _, observer in
            let socket = try RawSocket(port: observer.port)
            await socket.send(
                "POST /api/actors/1/stop?token=\(Self.token) HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
            await socket.send([UInt8](repeating: 0x41, count: 8192))
            let reply = await ObserverClient.readReply(socket)
            #expect(reply?.status == 413)
            #expect(await socket.closedByPeer(within: .seconds(5)))
        }
    }

    @Test func connectionsBeyondTheLimitAreClosedAtOnceAndPlacesComeBack() async throws {
        let settings = ObserverSettings(token: Self.token, maxConnections: 4)
        try await ObserverAccessTests.withObserver(settings) { _, observer in
            var held: [RawSocket] = []
            for _ in 0..<4 {
                let socket = try RawSocket(port: observer.port)
                await socket.send("GET / HTTP/1.1\r\n")  // a head that never ends
                held.append(socket)
            }
            #expect(await waitUntil("four connections open") { observer.openConnections == 4 })
            let fifth = try RawSocket(port: observer.port)
            #expect(await fifth.closedByPeer(within: .seconds(5)), "a fifth connection was kept")
            #expect(observer.openConnections == 4)
            held.removeLast()
            #expect(await waitUntil("a place came back") { observer.openConnections == 3 })
            let reply = try await ObserverClient.get(port: observer.port, "/api/state?token=\(Self.token)")
            #expect(reply?.status == 200)
            _ = held
        }
    }

    @Test func aSilentOrHalfSentConnectionIsClosedAfterTheIdleTimeout() async throws {
        let settings = ObserverSettings(token: Self.token, idleTimeout: .milliseconds(300))
        try await ObserverAccessTests.withObserver(settings) { _, observer in
            let silent = try RawSocket(port: observer.port)
            let partial = try RawSocket(port: observer.port)
            await partial.send("GET /api/state?tok")
            let started = ContinuousClock.now
            #expect(await silent.closedByPeer(within: .seconds(5)))
            #expect(await partial.closedByPeer(within: .seconds(5)))
            #expect(ContinuousClock.now - started >= .milliseconds(250))
            #expect(await waitUntil("no connection left") { observer.openConnections == 0 })
        }
    }

    @Test func aWebSocketFrameOverFourKiBClosesThePage() async throws {
        try await ObserverAccessTests.withObserver { _, observer in
            let (socket, status) = try await ObserverClient.openWebSocket(
                port: observer.port, "/ws?token=\(Self.token)")
            #expect(status == 101)
            #expect(await ObserverClient.readDocument(socket) != nil)
            await socket.send(ObserverClient.clientFrame(opcode: 1, [UInt8](repeating: 0x61, count: 5000)))
            #expect(await socket.closedByPeer(within: .seconds(5)))
            #expect(await waitUntil("the page left the hub") { observer.openConnections == 0 })
            #expect(observer.connectedPages == 0)
        }
    }

    @Test func garbageInsteadOfHTTPGetsAnErrorAndAClose() async throws {
        try await ObserverAccessTests.withObserver { _, observer in
            for garbage: [UInt8] in [
                [0x16, 0x03, 0x01, 0x02, 0x00, 0x01], Array("GET / HTTP/9.9\r\n\r\n".utf8),
                [0, 0, 0, 0, 13, 10, 13, 10],
            ] {
                let socket = try RawSocket(port: observer.port)
                await socket.send(garbage)
                #expect(await socket.closedByPeer(within: .seconds(5)), "\(garbage) kept the connection open")
            }
            #expect(observer.samplesTaken == 0)
        }
    }
}
