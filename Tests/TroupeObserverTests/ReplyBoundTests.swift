import Foundation
import Testing

@testable import troupe_observe

#if canImport(Glibc)
    import Glibc
#endif

/// `troupe-observe` reads what a server sends, which may be anything: a reply at the size
/// limit is read, one byte more is refused, garbage and a truncated head are typed errors, and
/// a server that trickles bytes cannot hold the view past the deadline. The server here is a
/// plain socket that writes exactly the bytes each case needs.
@Suite(.serialized)
struct ReplyBoundTests {
    /// Serves one connection on 127.0.0.1: reads the request's head, then runs `answer` with
    /// the socket, then closes it. Returns the port.
    static func serveOnce(_ answer: @escaping @Sendable (Int32) -> Void) throws -> Int {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(bound == 0 && listen(listener, 1) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread {
            let connection = accept(listener, nil, nil)
            close(listener)
            guard connection >= 0 else { return }
            var head: [UInt8] = []
            var byte: UInt8 = 0
            while !head.suffix(4).elementsEqual([13, 10, 13, 10]), recv(connection, &byte, 1, 0) == 1 {
                head.append(byte)
            }
            answer(connection)
            close(connection)
        }
        return port
    }

    static func write(_ bytes: [UInt8], to connection: Int32) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    static func endpoint(_ port: Int) throws -> ObserverEndpoint {
        try ObserverEndpoint(url: "http://127.0.0.1:\(port)/?token=abc")
    }

    static let request = Array("GET /api/state HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)

    @Test func aReplyAtTheLimitIsReadAndOneByteMoreIsRefused() throws {
        for size in [ObserverEndpoint.maximumReply, ObserverEndpoint.maximumReply + 1] {
            let port = try Self.serveOnce { Self.write([UInt8](repeating: UInt8(ascii: "x"), count: size), to: $0) }
            let endpoint = try Self.endpoint(port)
            if size <= ObserverEndpoint.maximumReply {
                #expect(try endpoint.plainExchange(Self.request).count == size)
            } else {
                #expect {
                    _ = try endpoint.plainExchange(Self.request)
                } throws: { error in
                    guard case .malformed(let reason) = error as? ObserverEndpoint.Failure else { return false }
                    return reason.contains("more than \(ObserverEndpoint.maximumReply) bytes")
                }
            }
        }
    }

    @Test func garbageAndATruncatedHeadAreMalformedNotACrash() throws {
        for reply in [
            "\u{0}\u{1}\u{2}garbage", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", "HTTP/1.1 abc\r\n\r\n{}", "",
        ] {
            let port = try Self.serveOnce { Self.write(Array(reply.utf8), to: $0) }
            #expect {
                _ = try Self.endpoint(port).state(TableView())
            } throws: { error in
                guard case .malformed = error as? ObserverEndpoint.Failure else { return false }
                return true
            }
        }
        // A whole head with a body that is not JSON.
        let port = try Self.serveOnce { Self.write(Array("HTTP/1.1 200 OK\r\n\r\n[1, 2".utf8), to: $0) }
        #expect(throws: ObserverEndpoint.Failure.self) { _ = try Self.endpoint(port).state(TableView()) }
    }

    @Test func aServerTricklingBytesIsCutOffAtTheDeadline() throws {
        let port = try Self.serveOnce { connection in
            // One byte every 300 ms for longer than the deadline, never closing first.
            for _ in 0..<30 {
                Self.write([UInt8(ascii: "H")], to: connection)
                usleep(300_000)
            }
        }
        let started = ContinuousClock.now
        #expect {
            _ = try Self.endpoint(port).plainExchange(Self.request)
        } throws: { error in
            guard case .unreachable(let reason) = error as? ObserverEndpoint.Failure else { return false }
            return reason.contains("no complete answer")
        }
        let took = ContinuousClock.now - started
        #expect(took >= ObserverEndpoint.replyDeadline && took < ObserverEndpoint.replyDeadline + .seconds(2))
    }
}
